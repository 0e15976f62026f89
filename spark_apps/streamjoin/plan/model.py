"""The logical plan, an intermediate representation with no Spark in it: typed nodes whose
expressions are sqlglot trees (every column qualified by its input's alias, `oq.ticker`), and
one vocabulary of enums (`Kind`, `JoinType`, `JoinKind`, `Emit`, `WindowFunction`) that every
layer dispatches on. SQL text appears only where the plan is shown: `explain` and
`Script.to_dict` (the JSON form), both through `sql()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from enum import StrEnum

from sqlglot import exp

from streamjoin.dialect import to_sql
from streamjoin.plan.windows import BucketWindow, RangeWindow, RowsWindow, Window

# the window classes are part of the plan's vocabulary: `model.RangeWindow` etc.
__all__ = ["BucketWindow", "RangeWindow", "RowsWindow", "Window"]


class Kind(StrEnum):
    """What a relation or a query gives: a stream (rows with rowtimes) or a table."""

    STREAM = "stream"
    TABLE = "table"


class JoinType(StrEnum):
    INNER = "INNER"
    LEFT = "LEFT"
    RIGHT = "RIGHT"
    FULL = "FULL"
    CROSS = "CROSS"
    # each left row at most once, when some right row matches it (SEMI) or when none does (ANTI);
    # no right column is output: EXISTS, IN (SELECT ...), NOT EXISTS, NOT IN (plan.analyzer.subqueries)
    SEMI = "LEFT SEMI"
    ANTI = "LEFT ANTI"

    @property
    def outer(self) -> bool:
        return self in (JoinType.LEFT, JoinType.RIGHT, JoinType.FULL)

    @property
    def filters(self) -> bool:
        """A semi or anti join: it keeps or drops left rows, and outputs none of the right's columns."""
        return self in (JoinType.SEMI, JoinType.ANTI)


class JoinKind(StrEnum):
    """The analyzer's classification of a join (SEMANTICS.md §4-§8); the value is how explain
    names it."""

    STREAM_STREAM_WINDOW = "stream-stream window join"
    INTERVAL = "interval join"
    WINDOW_TVF = "window join"
    ASOF = "ASOF join"
    ASOF_TABLE = "stream-table ASOF join"  # per stream row, the nearest row of a table snapshot
    SNAPSHOT = "stream-table snapshot join"
    BUCKETED = "bucketed table-preserving join"
    TEMPORAL = "process-time temporal join"
    TABLE_TABLE = "table-table join"
    CHANGELOG = "stream-table changelog join"  # a SELECT TABLE view over a stream, joined as it changes (Lenses)
    # RisingWave's join of two streams without a time bound: every row of both inputs, forever; an
    # outer join's NULL-extended row is withdrawn when a partner comes (a changelog)
    REGULAR = "regular join"

    @property
    def stream_stream(self) -> bool:
        """Joins of two streams whose windows bound them in time (Spark's join can run them)."""
        return self in (JoinKind.STREAM_STREAM_WINDOW, JoinKind.INTERVAL)

    @property
    def with_table(self) -> bool:
        """Joins against a table that keep no stream state."""
        return self in (JoinKind.SNAPSHOT, JoinKind.TEMPORAL, JoinKind.TABLE_TABLE, JoinKind.ASOF_TABLE)


class Emit(StrEnum):
    FINAL = "FINAL"
    EAGER = "EAGER"
    CHANGES = "CHANGES"


class WindowFunction(StrEnum):
    TUMBLE = "TUMBLE"
    HOP = "HOP"


def sql(expression: exp.Expression | None) -> str | None:
    """An expression of the plan as the streaming dialect's SQL (for explain and JSON)."""
    return to_sql(expression) if expression is not None else None


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    # a table column's DEFAULT, as SQL (`125`, `'nurse'`, `CURRENT_TIMESTAMP()`): what a seed row
    # (INSERT INTO t (columns) VALUES ...) that does not list the column holds (plan.analyzer.dml)
    default: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Relation:
    """A named input a query can read: a declared stream or table, or a view."""

    name: str
    kind: Kind
    columns: tuple[Column, ...]
    rowtime: str | None = None  # the rowtime column of a stream
    options: tuple[tuple[str, str], ...] = ()
    primary_key: tuple[str, ...] = ()
    lateness_ms: int = 0  # allowed lateness (WITH lateness = ..., or WATERMARK FOR ... - INTERVAL)
    view: bool = False
    implicit_rowtime: bool = False  # s-Server's ROWTIME: addressable, but not part of `*`
    # the rowtime is the instant streamjoin reads each row (a RisingWave source that declares no time)
    arrival_rowtime: bool = False

    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def option(self, key: str, default: str | None = None) -> str | None:
        return dict(self.options).get(key, default)

    @property
    def given(self) -> bool:
        """Rows the file itself gives (INSERT INTO t VALUES, a VALUES table: connector 'values'), not a view's."""
        return not self.view and self.option("connector") == "values"

    @property
    def changing(self) -> bool:
        """A table fed by its changes (FORMAT DEBEZIUM / UPSERT, a database's change data capture): a
        stream of upserts and deletes by its primary key."""
        return self.option("changelog") in ("debezium", "upsert", "cdc", "view")


# a changing relation whose rows have no key (a view of regular joins): its primary key is ROWS and
# then its columns; a '-' withdraws one row equal to it, a '+' adds one (operator.group.changed_row)
ROWS = "*"


@dataclass(frozen=True)
class TimeWindowFunction:
    """`TUMBLE(src, col, size [, offset])` / `HOP(src, col, slide, size [, offset])` in FROM:
    windows start where `col - offset` is a multiple of the slide (the size for TUMBLE)."""

    function: WindowFunction
    column: str
    size_ms: int
    slide_ms: int
    offset_ms: int = 0  # as written (it may be negative or exceed the slide)

    def describe(self) -> str:
        slide = f", slide {self.slide_ms} ms" if self.function == WindowFunction.HOP else ""
        offset = f", offset {self.offset_ms} ms" if self.offset_ms else ""
        return f"{self.function} on {self.column}, size {self.size_ms} ms{slide}{offset}"


@dataclass(frozen=True)
class Input:
    """One FROM item: a relation, its alias, and (for a stream) its window."""

    alias: str
    relation: str
    kind: Kind
    columns: tuple[str, ...]
    rowtime: str | None
    window: Window | None
    window_source: str  # how the window was given: "OVER", "WITHIN", "interval condition", "default", "changelog"
    temporal: bool = False  # FOR SYSTEM_TIME AS OF PROCTIME()
    time_window: TimeWindowFunction | None = None
    pushed_filters: tuple[exp.Expression, ...] = ()  # conjuncts on this input alone (tables: applied at load)
    line: int = field(default=0, compare=False)
    col: int = field(default=0, compare=False)


@dataclass(frozen=True)
class TimeBound:
    """`low <= right_rowtime - left_rowtime <= high` between two stream inputs (ms)."""

    left: str
    right: str
    low_ms: int | None
    high_ms: int | None
    origin: str  # "windows" | "condition" | "WITHIN"

    def describe(self) -> str:
        from streamjoin.plan.windows import format_ms

        def side(ms: int) -> str:
            if ms == 0:
                return f"{self.left}.ROWTIME"
            return f"{self.left}.ROWTIME {'+' if ms > 0 else '-'} {format_ms(abs(ms))}"

        low = side(self.low_ms) if self.low_ms is not None else "-inf"
        high = side(self.high_ms) if self.high_ms is not None else "+inf"
        return f"{low} <= {self.right}.ROWTIME <= {high}  (from {self.origin})"


@dataclass(frozen=True)
class Asof:
    """An ASOF join's inequality, written `left OP right` (left: an expression over the earlier
    inputs, right: over the new one)."""

    left: exp.Expression
    op: str  # < <= > >=
    right: exp.Expression


@dataclass(frozen=True)
class Condition:
    """A join condition split for the engine."""

    keys: tuple[tuple[exp.Expression, exp.Expression], ...] = ()  # (left, right) equalities
    time_bounds: tuple[TimeBound, ...] = ()
    residual: tuple[exp.Expression, ...] = ()  # everything else, evaluated on each candidate pair
    asof: Asof | None = None
    expression: exp.Expression | None = None  # the whole condition as written (qualified)
    from_where: bool = False  # a CROSS / comma join whose WHERE supplied the condition


@dataclass(frozen=True)
class Join:
    """The i-th join of a left-deep chain: (inputs[0..i]) JOIN inputs[i+1]."""

    join_type: JoinType
    kind: JoinKind
    right: str  # alias of the new input
    left_inputs: tuple[str, ...]
    condition: Condition
    using: tuple[str, ...] = ()
    natural: bool = False
    state: tuple[str, ...] = ()  # what the join keeps and when it is dropped
    # a query inside an expression this join stands for (plan.analyzer.subqueries): "EXISTS", "NOT
    # EXISTS", "IN", "NOT IN" (SQL's three-valued: null-aware), "scalar" (a single-row join)
    subquery: str | None = None
    line: int = field(default=0, compare=False)
    col: int = field(default=0, compare=False)


@dataclass(frozen=True)
class OutputColumn:
    name: str
    expression: exp.Expression  # qualified; the column ROWTIME is the output rowtime


@dataclass(frozen=True)
class Analytic:
    """An aggregate OVER a window of rows in a select list (s-Server's and KDA's windowed
    aggregates, RisingWave's OVER windows): one value for each row, over the rows of the row's
    partition in its frame that came up to and including it, in rowtime order (rows sharing a
    rowtime: the earlier ones only, docs/semantics-decisions.md). Ordered by a column that is not
    the rowtime (`ordered_by`, RisingWave's general OVER window over a source in arrival order):
    over every row so far in that column's order, peers included, so a row that comes out of order
    changes the values of rows written before it: the query writes a changelog."""

    expression: exp.Expression  # the OVER (...) as it stands in the output (qualified)
    function: str  # COUNT SUM AVG MIN MAX STDDEV_SAMP STDDEV_POP VAR_SAMP VAR_POP FIRST_VALUE LAST_VALUE NTH_VALUE LAG
    argument: exp.Expression | None  # None: COUNT(*)
    partition_by: tuple[exp.Expression, ...] = ()
    frame: str = "unbounded"  # "range" (size, lag in ms) | "rows" (size rows back) | "unbounded"
    size: int = 0
    lag: int = 0  # RANGE BETWEEN size AND lag PRECEDING: the frame ends `lag` ms before the row
    offset: int = 1  # LAG's offset, NTH_VALUE's n
    from_last: bool = False  # NTH_VALUE ... FROM LAST
    ignore_nulls: bool = False
    default: exp.Expression | None = None  # LAG's third argument
    problem: str | None = None  # why `run` cannot compute it; None: it can
    ordered_by: exp.Expression | None = None  # ORDER BY a column that is not the rowtime (ascending)


@dataclass(frozen=True)
class Aggregation:
    bucket: exp.Expression | None  # the time bucket (FLOOR(... TO unit) or window_start)
    bucket_unit: str | None
    keys: tuple[exp.Expression, ...]
    window: TimeWindowFunction | None = None  # the TUMBLE / HOP whose window_start is the bucket


@dataclass(frozen=True)
class Query:
    name: str  # view name, or "query" for the final query
    kind: Kind  # what the query produces
    select_kind: str | None  # STREAM | TABLE as written, None for a plain SELECT
    inputs: tuple[Input, ...]
    joins: tuple[Join, ...]
    output: tuple[OutputColumn, ...]
    where: exp.Expression | None
    aggregation: Aggregation | None
    emit: Emit
    sink: str | None = None  # INSERT INTO target
    # a stream view that selects another expression AS ROWTIME promotes it to its rowtime (s-Server):
    # how far its rows may be out of that order (its t-sort, ORDER BY ... WITHIN; 0 without one).
    # None: its rowtime is its inputs' (lower.staged_views runs a promoting view as a part of its own)
    disorder_ms: int | None = None
    # SELECT DISTINCT: () (every output column) or DISTINCT ON's expressions; None: no DISTINCT
    distinct: tuple[exp.Expression, ...] | None = None
    # UNION ALL: the views of its branches (each a query of its own), whose rows this view passes on
    union_of: tuple[str, ...] = ()
    having: exp.Expression | None = None  # HAVING: a group's row is written only where it holds
    # clauses `check` reads and `run` does not carry out yet (HAVING, ORDER BY, LIMIT, QUALIFY), as
    # written: run refuses the query naming them rather than write rows they would have removed
    unrun: tuple[str, ...] = ()
    analytics: tuple[Analytic, ...] = ()  # the output's aggregates OVER windows of rows, in output order
    # ORDER BY ROWTIME, c1 [DESC], ...: rows of one rowtime leave ordered by these output columns
    # (name, descending); (): in the order they come (lower.staged_views runs such a view alone)
    order_within: tuple[tuple[str, bool], ...] = ()
    # a query over tables only (one batch): ORDER BY output columns (name, descending, NULLs
    # first) and LIMIT n, which the batch carries out; `unrun` less them is `table_unrun`
    table_order: tuple[tuple[str, bool, bool], ...] = ()
    table_limit: int | None = None
    table_unrun: tuple[str, ...] = ()
    # the file's INSERT / UPDATE / DELETE statements before this query's (its instant on the script's
    # clock, one statement one epoch: plan.rewrites.script_time)
    epoch: int = 0

    def input(self, alias: str) -> Input:
        return next(i for i in self.inputs if i.alias == alias)

    def streams(self) -> list[str]:
        """The aliases of the stream inputs, in FROM order."""
        return [i.alias for i in self.inputs if i.kind == Kind.STREAM]

    def changing_analytics(self) -> bool:
        """Its OVER windows are ordered by a column that is not the rowtime: their values change as
        rows come out of that order, and the query writes a changelog (`Analytic.ordered_by`)."""
        return any(a.ordered_by is not None for a in self.analytics)

    def changelog_key(self) -> tuple[str, ...] | None:
        """A running aggregate (GROUP BY without a time bucket over streams) changes its groups' rows as
        rows come: a view of one is a table fed by its changes, keyed by its groups. Each key's output
        column, else `__k{i}` (its i-th GROUP BY key, which `lower.staged_views` writes beside the
        output), `__k_all` for the one group of no keys. A view of regular joins changes too (an outer
        one's NULL-extended rows, a changing table's updates), and its rows have no key: ROWS, then
        the columns a withdrawal is matched by; so has a view whose OVER windows change their rows'
        values (`changing_analytics`). None: neither."""
        agg = self.aggregation
        if self.kind == Kind.STREAM and agg is None and self.changing_analytics():
            return (ROWS, *(o.name for o in self.output))
        if (self.kind == Kind.STREAM and agg is None and self.emit == Emit.CHANGES and self.joins
                and all(j.kind == JoinKind.REGULAR for j in self.joins)):
            return (ROWS, *(o.name for o in self.output))  # regular joins' rows: no key, each row by its values
        if self.kind != Kind.STREAM or agg is None or agg.bucket is not None or not self.streams():
            return None
        return tuple(next((o.name for o in self.output if o.expression == k), f"__k{i}") for i, k in enumerate(agg.keys)) or ("__k_all",)


@dataclass(frozen=True)
class Pump:
    """A pump of an application: `CREATE PUMP name AS INSERT INTO target SELECT ... FROM reads`
    (its query is the view named `target`, or the final query)."""

    name: str
    target: str
    reads: tuple[str, ...]


@dataclass(frozen=True)
class Script:
    """Everything a SQL file declares, and its queries in order (views first)."""

    relations: tuple[Relation, ...]
    sinks: tuple[Relation, ...]
    settings: tuple[tuple[str, str], ...]
    queries: tuple[Query, ...]
    pumps: tuple[Pump, ...] = ()
    outputs: tuple[str, ...] = ()  # an application with several output streams: their queries' names
    dialect: str = "default"  # the profile the file was read with (dialect.profiles)
    dialect_reason: str = ""  # why that profile: chosen (--dialect, app.toml) or detected, and from what
    notes: tuple[str, ...] = ()  # statements dropped, replaced or ignored, and warnings (explain, check)

    @property
    def final(self) -> Query | None:
        """The query `run` runs: the final query, or in a file of views alone (RisingWave's
        `CREATE MATERIALIZED VIEW`) the last view (the first output of several: `runs`)."""
        if self.outputs:
            return self.view(self.outputs[0])
        return next((q for q in self.queries if q.name == "query"), self.queries[-1] if self.queries else None)

    @property
    def runs(self) -> tuple[Query, ...]:
        """Every query `run` runs: the final one, or an application's several outputs."""
        if self.outputs:
            return tuple(self.view(name) for name in self.outputs)
        return (self.final,) if self.final is not None else ()

    def relation(self, name: str) -> Relation:
        return next(r for r in self.relations if r.name == name)

    def view(self, name: str) -> Query:
        return next(q for q in self.queries if q.name == name)

    def to_dict(self) -> dict:
        """The plan as JSON-ready data (explain --format json): expressions as SQL text."""
        return _jsonable(self)


# the JSON form's names where a field's differs (the JSON is a contract: explain --format json)
_JSON_NAMES = {"expression": "text"}


def _jsonable(value):
    if isinstance(value, exp.Expression):
        return sql(value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, Asof):
        return [sql(value.left), value.op, sql(value.right)]
    if is_dataclass(value) and not isinstance(value, type):
        names = _JSON_NAMES if isinstance(value, Condition) else {}
        return {names.get(f.name, f.name): _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
