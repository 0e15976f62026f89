"""The logical plan: plain dataclasses, no Spark. Expressions are SQL text of the streaming
dialect with every column qualified by its input's alias (`oq.ticker`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from streamjoin.plan.windows import BucketWindow, RangeWindow, RowsWindow, Window

# the window classes are part of the plan's vocabulary: `model.RangeWindow` etc.
__all__ = ["BucketWindow", "RangeWindow", "RowsWindow", "Window"]

STREAM, TABLE = "stream", "table"

# Join kinds (the analyzer's classification, SEMANTICS.md §4-§8).
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


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class Relation:
    """A named input a query can read: a declared stream or table, or a view."""

    name: str
    kind: str  # STREAM | TABLE
    columns: tuple[Column, ...]
    rowtime: str | None = None  # the rowtime column of a stream
    options: tuple[tuple[str, str], ...] = ()
    primary_key: tuple[str, ...] = ()
    lateness_ms: int = 0  # allowed lateness (WITH lateness = ..., or WATERMARK FOR ... - INTERVAL)
    view: bool = False
    implicit_rowtime: bool = False  # s-Server's ROWTIME: addressable, but not part of `*`

    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def option(self, key: str, default: str | None = None) -> str | None:
        return dict(self.options).get(key, default)


@dataclass(frozen=True)
class TimeWindowFunction:
    """`TUMBLE(src, col, size [, offset])` / `HOP(src, col, slide, size [, offset])` in FROM:
    windows start where `col - offset` is a multiple of the slide (the size for TUMBLE)."""

    function: str  # TUMBLE | HOP
    column: str
    size_ms: int
    slide_ms: int
    offset_ms: int = 0  # as written (it may be negative or exceed the slide)

    def describe(self) -> str:
        slide = f", slide {self.slide_ms} ms" if self.function == "HOP" else ""
        offset = f", offset {self.offset_ms} ms" if self.offset_ms else ""
        return f"{self.function} on {self.column}, size {self.size_ms} ms{slide}{offset}"


@dataclass(frozen=True)
class Input:
    """One FROM item: a relation, its alias, and (for a stream) its window."""

    alias: str
    relation: str
    kind: str
    columns: tuple[str, ...]
    rowtime: str | None
    window: Window | None
    window_source: str  # how the window was given: "OVER", "WITHIN", "interval condition", "default"
    temporal: bool = False  # FOR SYSTEM_TIME AS OF PROCTIME()
    time_window: TimeWindowFunction | None = None
    pushed_filters: tuple[str, ...] = ()  # conjuncts on this input alone (tables: applied at load)
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
class Condition:
    """A join condition split for the engine."""

    keys: tuple[tuple[str, str], ...] = ()  # (left expression, right expression) equalities
    time_bounds: tuple[TimeBound, ...] = ()
    residual: tuple[str, ...] = ()  # everything else, evaluated on each candidate pair
    asof: tuple[str, str, str] | None = None  # (left expression, operator, right expression)
    text: str | None = None  # the whole condition as written (qualified)
    from_where: bool = False  # a CROSS / comma join whose WHERE supplied the condition


@dataclass(frozen=True)
class Join:
    """The i-th join of a left-deep chain: (inputs[0..i]) JOIN inputs[i+1]."""

    join_type: str  # INNER | LEFT | RIGHT | FULL | CROSS
    kind: str  # one of the join kinds above
    right: str  # alias of the new input
    left_inputs: tuple[str, ...]
    condition: Condition
    using: tuple[str, ...] = ()
    natural: bool = False
    state: tuple[str, ...] = ()  # what the join keeps and when it is dropped
    line: int = field(default=0, compare=False)
    col: int = field(default=0, compare=False)


@dataclass(frozen=True)
class OutputColumn:
    name: str
    expression: str  # qualified SQL, or ROWTIME for the output rowtime


@dataclass(frozen=True)
class Aggregation:
    bucket: str | None  # SQL of the time bucket (FLOOR(... TO unit) or window_start)
    bucket_unit: str | None
    keys: tuple[str, ...]
    window: TimeWindowFunction | None = None  # the TUMBLE / HOP whose window_start is the bucket


@dataclass(frozen=True)
class Query:
    name: str  # view name, or "query" for the final query
    kind: str  # STREAM | TABLE: what the query produces
    select_kind: str | None  # STREAM | TABLE as written, None for a plain SELECT
    inputs: tuple[Input, ...]
    joins: tuple[Join, ...]
    output: tuple[OutputColumn, ...]
    where: str | None
    aggregation: Aggregation | None
    emit: str  # FINAL | EAGER | CHANGES
    sink: str | None = None  # INSERT INTO target

    def input(self, alias: str) -> Input:
        return next(i for i in self.inputs if i.alias == alias)


@dataclass(frozen=True)
class Script:
    """Everything a SQL file declares, and its queries in order (views first)."""

    relations: tuple[Relation, ...]
    sinks: tuple[Relation, ...]
    settings: tuple[tuple[str, str], ...]
    queries: tuple[Query, ...]

    @property
    def final(self) -> Query | None:
        """The query `run` runs: the final query, or in a file of views alone (RisingWave's
        `CREATE MATERIALIZED VIEW`) the last view."""
        return next((q for q in self.queries if q.name == "query"), self.queries[-1] if self.queries else None)

    def to_dict(self) -> dict:
        return _jsonable(asdict(self))


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
