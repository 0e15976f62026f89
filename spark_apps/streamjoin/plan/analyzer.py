"""The analyzer: parsed statements -> a logical plan (streamjoin.plan.model).

It resolves names, expands USING / NATURAL / `*`, classifies inputs (stream or table) and
joins (SEMANTICS.md §4-§8), derives each input's window (§3) and rejects what §5, §7 and §9
forbid, with the position of the offending construct.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace

from sqlglot import exp

from streamjoin.dialect import SelectKind, Within, parse_script, to_sql
from streamjoin.errors import SqlError
from streamjoin.plan import model as m
from streamjoin.plan.catalog import relation_from_create
from streamjoin.plan.conditions import Ref, conjuncts, merge_bounds, refs_of, split
from streamjoin.plan.scope import Located, ident_name, interval_to_ms, offset_of, relation_name
from streamjoin.plan.state import describe_state
from streamjoin.plan.windows import (
    BUCKET_UNITS,
    CURRENT_ROW,
    BucketWindow,
    RangeWindow,
    RowsWindow,
)

OUTPUT_ROWTIME = "ROWTIME"
_AGGREGATES = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)


def analyze(sql: str, filename: str = "<sql>") -> m.Script:
    """Parse and analyse a SQL file; raises SqlError on the first rejected construct."""
    return Analyzer(Located(sql, filename)).script(parse_script(sql, filename))


@dataclass
class _Item:
    """A FROM item while the query is being analysed."""

    alias: str
    relation: m.Relation
    node: exp.Expression
    window: object = None
    window_source: str = "default"
    temporal: bool = False
    time_window: m.TimeWindowFunction | None = None
    pushed: list[str] = field(default_factory=list)

    @property
    def is_stream(self) -> bool:
        return self.relation.kind == m.STREAM

    @property
    def columns(self) -> tuple[str, ...]:
        extra = ("window_start", "window_end") if self.time_window else ()
        return self.relation.column_names() + extra


class Analyzer:
    def __init__(self, where: Located):
        self.where = where
        self.relations: dict[str, m.Relation] = {}
        self.sinks: dict[str, m.Relation] = {}
        self.settings: list[tuple[str, str]] = []
        self.queries: list[m.Query] = []

    # ------------------------------------------------------------------ statements
    def script(self, statements: list[exp.Expression]) -> m.Script:
        for statement in statements:
            self.statement(statement)
        return m.Script(
            relations=tuple(self.relations.values()),
            sinks=tuple(self.sinks.values()),
            settings=tuple(self.settings),
            queries=tuple(self.queries),
        )

    def statement(self, st: exp.Expression) -> None:
        if isinstance(st, exp.Create):
            self.create(st)
        elif isinstance(st, exp.With):  # Lenses: WITH name AS (query);
            for cte in st.expressions:
                self.view(ident_name(cte.args["alias"]), cte.this, cte)
        elif isinstance(st, exp.Set):
            for item in st.expressions:
                eq = item.this
                key = eq.this.sql() if isinstance(eq, exp.EQ) else eq.sql()
                value = eq.expression.sql() if isinstance(eq, exp.EQ) else ""
                self.settings.append((key, value))
        elif isinstance(st, exp.Insert):
            target = st.this.this if isinstance(st.this, exp.Schema) else st.this
            self.final(st.expression, sink=relation_name(target))
        elif isinstance(st, exp.Query):
            self.final(st)
        else:
            self.where.fail(
                f"unsupported statement: {st.key.upper()}",
                st,
                "a file holds CREATE STREAM/TABLE/VIEW/SINK, WITH, SET, INSERT INTO and one query",
            )

    def create(self, st: exp.Create) -> None:
        kind = (st.text("kind") or "").upper()
        if kind == "VIEW":
            self.view(relation_name(st.this), st.expression, st)
        elif kind in ("STREAM", "TABLE", "SINK") and st.expression is None:
            relation = relation_from_create(st, self.where)
            target = self.sinks if kind == "SINK" else self.relations
            if relation.name in self.relations or relation.name in self.sinks:
                self.where.fail(f"'{relation.name}' is declared twice", st.this, "give each stream, table and sink its own name")
            target[relation.name] = relation
        else:
            self.where.fail(
                f"unsupported statement: CREATE {kind}" + (" ... AS query" if st.expression else ""),
                st.this,
                "use CREATE STREAM | TABLE | SOURCE | SINK name (...) WITH (...) or CREATE VIEW name AS query",
            )

    def view(self, name: str, query: exp.Expression, node: exp.Expression) -> None:
        if name in self.relations:
            self.where.fail(f"'{name}' is declared twice", node, "give each view its own name")
        plan = self.query(query, name)
        self.queries.append(plan)
        columns = [m.Column(c.name, "UNKNOWN") for c in plan.output]
        implicit = plan.kind == m.STREAM and "rowtime" not in [c.name for c in columns]
        if implicit:
            columns.append(m.Column("rowtime", "TIMESTAMP"))
        self.relations[name] = m.Relation(
            name=name,
            kind=plan.kind,
            columns=tuple(columns),
            rowtime="rowtime" if plan.kind == m.STREAM else None,
            view=True,
            implicit_rowtime=implicit,
        )

    def final(self, query: exp.Expression, sink: str | None = None) -> None:
        if any(q.name == "query" for q in self.queries):
            self.where.fail("a file holds one final query; this is a second one", query, "turn the earlier one into a CREATE VIEW")
        self.queries.append(self.query(query, "query", sink))

    # ------------------------------------------------------------------ queries
    def query(self, select: exp.Expression, name: str, sink: str | None = None) -> m.Query:
        if isinstance(select, exp.Subquery):
            select = select.unnest()
        if not isinstance(select, exp.Select):
            self.where.fail(f"unsupported query form: {select.key.upper()}", select, "write a single SELECT")
        if select.args.get("with_"):
            self.where.fail("WITH inside a query is not supported", select.args["with_"], "declare each part as a view first: WITH name AS (query);")
        from_ = select.args.get("from_")
        if from_ is None:
            self.where.fail("a query needs a FROM clause", select, "SELECT STREAM ... FROM stream")
        named_windows = {ident_name(w.this): w for w in select.args.get("windows") or []}
        q = _QueryAnalysis(self, select, named_windows)
        return q.run(name, sink)

    def relation(self, table: exp.Table) -> m.Relation:
        name = relation_name(table)
        candidates = [name, name.split(".")[-1]]
        for candidate in candidates:
            if candidate in self.relations:
                return self.relations[candidate]
        by_last_part = [r for n, r in self.relations.items() if n.split(".")[-1] == name]
        if len(by_last_part) == 1:  # `order_quantity` for a declared `stocks.order_quantity`
            return by_last_part[0]
        known = sorted(self.relations)
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else (
            f"declared: {', '.join(known)}" if known else "declare it first: CREATE STREAM name (...) WITH (...)"
        )
        self.where.fail(f"unknown stream or table '{name}'", table, hint)


def ident(name: str) -> exp.Identifier:
    """An identifier that reads back as the same name (quoted unless plain lower case)."""
    return exp.Identifier(this=name, quoted=not re.fullmatch(r"[a-z_][a-z0-9_]*", name))


def qualified(ref: Ref) -> exp.Column:
    col = exp.Column(this=ident(ref.column), table=ident(ref.alias))
    col.meta["ref"] = ref
    return col


class _QueryAnalysis:
    """One SELECT: FROM items, joins, projection, WHERE, GROUP BY."""

    def __init__(self, analyzer: Analyzer, select: exp.Select, named_windows: dict):
        self.a = analyzer
        self.where = analyzer.where
        self.select = select
        self.named_windows = named_windows
        self.items: list[_Item] = []
        self.using: dict[str, exp.Expression] = {}  # USING / NATURAL column -> COALESCE(...)
        self.using_order: list[str] = []
        self.using_members: dict[str, set[str]] = {}  # USING column -> aliases merged into it
        self.joins: list[m.Join] = []

    def run(self, name: str, sink: str | None) -> m.Query:
        select = self.select
        self.add_item(select.args["from_"].this, None)
        for join in select.args.get("joins") or []:
            self.join(join)
        has_stream = any(i.is_stream for i in self.items)
        kind_node = select.args.get("hint")
        select_kind = kind_node.name if isinstance(kind_node, SelectKind) else None
        if select_kind == "STREAM" and not has_stream:
            self.where.fail("SELECT STREAM needs at least one stream input", kind_node, "use SELECT (or SELECT TABLE) over tables")
        kind = m.TABLE if select_kind == "TABLE" or not has_stream else m.STREAM
        output = self.projection(has_stream)
        where = self.filter(has_stream)
        aggregation = self.aggregation(has_stream)
        emit = select.args.get("emit")
        inputs = tuple(self.freeze(i) for i in self.items)
        return m.Query(
            name=name,
            kind=kind,
            select_kind=select_kind,
            inputs=inputs,
            joins=tuple(self.joins),
            output=output,
            where=where,
            aggregation=aggregation,
            emit=emit.name if emit else "FINAL",
            sink=sink,
        )

    def freeze(self, item: _Item) -> m.Input:
        line, col = self.where.position(item.node)
        return m.Input(
            alias=item.alias,
            relation=item.relation.name,
            kind=item.relation.kind,
            columns=item.columns,
            rowtime=item.relation.rowtime,
            window=item.window if item.is_stream and not item.time_window else None,
            window_source=item.window_source if item.is_stream else "table",
            temporal=item.temporal,
            time_window=item.time_window,
            pushed_filters=tuple(item.pushed),
            line=line,
            col=col,
        )

    # ------------------------------------------------------------------ FROM items
    def add_item(self, node: exp.Expression, within: Within | None) -> _Item:
        if not isinstance(node, exp.Table):
            self.where.fail(
                f"unsupported FROM item: {node.key.upper()}",
                node,
                "subqueries in FROM are not supported; declare a view (CREATE VIEW v AS ... or WITH v AS (...);) and join it",
            )
        time_window = None
        if isinstance(node.this, (exp.Anonymous, exp.Func)) and not isinstance(node.this, exp.Identifier):
            relation, time_window = self.time_window_function(node.this)
        else:
            relation = self.a.relation(node)
        alias_node = node.args.get("alias")
        alias = ident_name(alias_node.this) if alias_node else relation.name.split(".")[-1]
        if any(i.alias == alias for i in self.items):
            self.where.fail(f"the input name '{alias}' is used twice", alias_node or node, "give each input its own alias: ... AS b2")
        item = _Item(alias=alias, relation=relation, node=node, time_window=time_window)
        version = node.args.get("version")
        if version is not None:
            if "PROCTIME" not in version.sql().upper():
                self.where.fail("only FOR SYSTEM_TIME AS OF PROCTIME() is supported", version, "process-time temporal join: JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON ...")
            if item.is_stream:
                self.where.fail(f"FOR SYSTEM_TIME AS OF PROCTIME() applies to a table; '{relation.name}' is a stream", version, "the right side of a temporal join must be a table")
            item.temporal = True
        window = node.args.get("window")
        if window is not None:
            if not item.is_stream:
                self.where.fail(f"a window applies to a stream; '{relation.name}' is a table", window, "remove the OVER clause: a table is joined as a snapshot")
            item.window, item.window_source = self.window(window, relation.rowtime), "OVER"
        elif within is not None:
            item.window_source = "WITHIN"
        elif item.is_stream:
            item.window = CURRENT_ROW
        self.items.append(item)
        return item

    def time_window_function(self, func: exp.Expression) -> tuple[m.Relation, m.TimeWindowFunction]:
        fname = (func.name or "").upper()
        args = list(func.expressions) if isinstance(func, exp.Anonymous) else list(func.args.values())
        if fname not in ("TUMBLE", "HOP"):
            self.where.fail(f"unsupported table function {fname}", func, "TUMBLE(src, col, size) and HOP(src, col, slide, size) are supported in FROM")
        expected = 3 if fname == "TUMBLE" else 4
        if len(args) not in (expected, expected + 1) or not isinstance(args[0], (exp.Column, exp.Table)):
            self.where.fail(f"{fname} takes {expected} arguments, or {expected + 1} with an offset", func,
                            "TUMBLE(src, col, size [, offset]) or HOP(src, col, slide, size [, offset]), "
                            "e.g. TUMBLE(src, col, INTERVAL '1' MINUTE)")
        offset = 0
        if len(args) == expected + 1:
            offset = self.signed_interval(args.pop(), f"the offset of {fname}")
        relation = self.a.relation(exp.Table(this=args[0].this))
        if relation.kind != m.STREAM:
            self.where.fail(f"{fname} applies to a stream; '{relation.name}' is a table", args[0], "window a stream")
        column = ident_name(args[1])
        if column not in relation.column_names():
            self.where.fail(f"unknown column '{column}' in {fname}", args[1], f"columns are: {', '.join(relation.column_names())}")
        sizes = [interval_to_ms(a, self.where) if isinstance(a, exp.Interval) else None for a in args[2:]]
        if None in sizes or min(sizes) <= 0:
            self.where.fail(f"{fname} sizes must be positive intervals", func, "e.g. INTERVAL '1' MINUTE")
        size, slide = (sizes[0], sizes[0]) if fname == "TUMBLE" else (sizes[1], sizes[0])
        return relation, m.TimeWindowFunction(fname, column, size, slide, offset)

    def signed_interval(self, node: exp.Expression, what: str) -> int:
        """Milliseconds of `INTERVAL '...' unit`, `-INTERVAL ...` or `INTERVAL '-...' unit`."""
        negative = isinstance(node, exp.Neg)
        inner = node.this if negative else node
        if not isinstance(inner, exp.Interval):
            self.where.fail(f"{what} must be an interval", node, "e.g. INTERVAL '1' SECOND (or a negative one)")
        ms = interval_to_ms(inner, self.where)
        return -ms if negative else ms

    # ------------------------------------------------------------------ windows
    def window(self, node: exp.Window, rowtime: str | None):
        spec_node = node
        if node.args.get("alias") is not None and node.args.get("spec") is None and node.args.get("order") is None:
            name = ident_name(node.args["alias"])
            if name not in self.named_windows:
                self.where.fail(f"unknown window '{name}'", node, f"define it: WINDOW {name} AS (RANGE INTERVAL '1' MINUTE PRECEDING)")
            spec_node = self.named_windows[name]
        partition = tuple(self.window_column(p) for p in spec_node.args.get("partition_by") or [])
        order = spec_node.args.get("order")
        spec = spec_node.args.get("spec")
        if order is not None:
            return self.bucket(order, spec, node, rowtime)
        if spec is None:
            self.where.fail("a join window needs RANGE or ROWS", node, "e.g. OVER (RANGE INTERVAL '1' MINUTE PRECEDING)")
        kind = spec.text("kind").upper()
        start, start_side = spec.args.get("start"), (spec.text("start_side") or "").upper()
        end, end_side = spec.args.get("end"), (spec.text("end_side") or "").upper()
        if "UNBOUNDED" in (str(start).upper(), str(end).upper()):
            self.where.fail(
                "an UNBOUNDED window is not supported on a join input: its state would grow forever",
                node,
                "bound it: RANGE INTERVAL '1' HOUR PRECEDING or ROWS 100 PRECEDING",
            )
        if "FOLLOWING" in (start_side, end_side) and not _is_zero(end):
            self.where.fail("FOLLOWING is not supported in a join window", spec, "a join window looks back: RANGE INTERVAL '1' MINUTE PRECEDING")
        if kind == "ROWS":
            return self.rows_window(spec, start, end, end_side, partition)
        if kind == "RANGE":
            window = self.range_window(spec, start, end, end_side)
            return window
        self.where.fail(f"unsupported window kind {kind}", spec, "use RANGE or ROWS")

    def window_column(self, node: exp.Expression) -> str:
        return ident_name(node.this if isinstance(node, exp.Column) else node)

    def rows_window(self, spec, start, end, end_side, partition) -> RowsWindow:
        count = self.row_count(start, spec)
        if end is not None and not _is_current_row(end) and not _is_zero(end):
            self.where.fail("ROWS BETWEEN n PRECEDING AND m PRECEDING is not supported", spec, "use ROWS n PRECEDING or ROWS BETWEEN n PRECEDING AND CURRENT ROW")
        return RowsWindow(count, partition)

    def row_count(self, start, spec) -> int:
        if _is_current_row(start):
            return 0
        if isinstance(start, exp.Neg) or (isinstance(start, exp.Literal) and start.is_number and int(float(start.name)) < 0):
            self.where.fail("ROWS needs a non-negative row count", start, "e.g. ROWS 5 PRECEDING")
        if not (isinstance(start, exp.Literal) and start.is_number and float(start.name).is_integer()):
            self.where.fail("ROWS needs a whole number of rows", start if start is not None else spec, "e.g. ROWS 5 PRECEDING")
        return int(start.name)

    def range_window(self, spec, start, end, end_side) -> RangeWindow:
        if _is_current_row(start) and (end is None or _is_current_row(end)):
            return CURRENT_ROW
        size = self.range_bound(start, spec)
        if end is None or _is_current_row(end):
            return RangeWindow(size)
        lag = self.range_bound(end, spec)
        if lag > size:
            self.where.fail("RANGE BETWEEN a AND b PRECEDING needs a >= b", spec, "the first interval is the far end of the window")
        return RangeWindow(size, lag)

    def range_bound(self, node, spec) -> int:
        if not isinstance(node, exp.Interval):
            self.where.fail("a RANGE window is measured in time: use an INTERVAL", node if node is not None else spec, "e.g. RANGE INTERVAL '1' MINUTE PRECEDING")
        ms = interval_to_ms(node, self.where)
        if ms < 0:
            self.where.fail("a RANGE window needs a non-negative interval", node, "e.g. RANGE INTERVAL '1' MINUTE PRECEDING")
        return ms

    def bucket(self, order: exp.Order, spec, node, rowtime: str | None) -> BucketWindow:
        keys = order.expressions
        floor = keys[0].this if len(keys) == 1 else None
        unit = floor.text("to").upper() if isinstance(floor, exp.Floor) and floor.args.get("to") else None
        on_rowtime = isinstance(floor, exp.Floor) and ident_name(floor.this) in ("rowtime", rowtime)
        if not unit or not on_rowtime or unit not in BUCKET_UNITS:
            self.where.fail("ORDER BY in a join window must be FLOOR(ROWTIME TO unit)", order, "e.g. OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW)")
        if spec is not None and not (_is_current_row(spec.args.get("start")) and spec.text("kind").upper() == "RANGE"):
            self.where.fail("a bucket window is ORDER BY FLOOR(ROWTIME TO unit) RANGE CURRENT ROW", node, "other frames over a bucket are not supported")
        return BucketWindow(unit)

    # ------------------------------------------------------------------ names
    def resolve(self, col: exp.Column, items: list[_Item], output_rowtime: bool):
        """A Ref, an exp for a USING column, or OUTPUT_ROWTIME."""
        name = ident_name(col.this)
        parts = [col.args.get(k) for k in ("db", "table")]
        qualifier = ".".join(ident_name(p) for p in parts if p is not None)
        if qualifier:
            item = next((i for i in items if i.alias == qualifier), None)
            if item is None:
                item = next((i for i in items if i.relation.name == qualifier and i.alias == qualifier.split(".")[-1]), None)
            if item is None:
                in_scope = ", ".join(i.alias for i in items)
                self.where.fail(f"unknown input '{qualifier}' in {qualifier}.{name}", col, f"inputs in scope here: {in_scope}")
            return self.column_of(item, name, col, f"{qualifier}.{name}")
        in_scope = {i.alias for i in items}
        merged = self.using_members.get(name, set()) if self.using_members.get(name, {"?"}) <= in_scope else set()
        if name == "rowtime" and output_rowtime and any(i.is_stream for i in self.items):
            return OUTPUT_ROWTIME
        candidates = [
            i for i in items if (name in i.columns or (name == "rowtime" and i.is_stream)) and i.alias not in merged
        ]
        if merged and not candidates:
            return self.using[name]
        if merged:
            names = " or ".join([to_sql(self.using[name])] + [f"{i.alias}.{name}" for i in candidates])
            self.where.fail(f"column '{name}' is ambiguous", col, f"qualify it: {names}")
        if not candidates:
            every = sorted({c for i in items for c in i.columns})
            close = difflib.get_close_matches(name, every, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"columns in scope: {', '.join(every)}"
            self.where.fail(f"unknown column '{name}'", col, hint)
        if len(candidates) > 1:
            names = " or ".join(f"{i.alias}.{name}" for i in candidates)
            self.where.fail(f"column '{name}' is ambiguous", col, f"qualify it: {names}")
        return self.column_of(candidates[0], name, col, name)

    def column_of(self, item: _Item, name: str, col: exp.Column, shown: str) -> Ref:
        if name == "rowtime" and item.is_stream:
            return Ref(item.alias, item.relation.rowtime, True)
        if name not in item.columns:
            close = difflib.get_close_matches(name, item.columns, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"columns of {item.alias}: {', '.join(item.columns)}"
            self.where.fail(f"unknown column '{shown}'", col, hint)
        return Ref(item.alias, name, item.is_stream and name == item.relation.rowtime)

    def qualify(self, node: exp.Expression, items: list[_Item], output_rowtime: bool) -> exp.Expression:
        """A copy of node with every column resolved and qualified."""
        node = node.copy()
        for col in list(node.find_all(exp.Column)):
            if isinstance(col.this, exp.Star):
                continue
            target = self.resolve(col, items, output_rowtime)
            if target == OUTPUT_ROWTIME:
                replacement = exp.Column(this=exp.Identifier(this=OUTPUT_ROWTIME, quoted=False))
            elif isinstance(target, Ref):
                replacement = qualified(target)
            else:
                replacement = target.copy()  # a USING column's COALESCE (copies keep meta refs)
            offset = offset_of(col)
            if offset is not None:
                replacement.meta["offset"] = offset
            if col is node:
                node = replacement
            else:
                col.replace(replacement)
        return node

    # ------------------------------------------------------------------ joins
    def join(self, join: exp.Join) -> None:
        within = join.args.get("within")
        left_items = list(self.items)
        right = self.add_item(join.this, within)
        join_type, natural, asof = self.join_type(join)
        on, using = join.args.get("on"), [ident_name(u) for u in join.args.get("using") or []]
        if join_type == "CROSS" and (on is not None or using):
            self.where.fail("CROSS JOIN takes no ON or USING condition", on if on is not None else join.args["using"][0], "drop the condition, or write JOIN ... ON to join on it")
        if within is not None:
            self.apply_within(within, left_items, right, join)
        if natural:
            using = self.natural_columns(left_items, right, join)
        if using:
            on = self.using_condition(using, join, left_items, right, join_type)
        elif on is None and join_type != "CROSS" and not self.is_comma(join):
            on = self.key_condition(left_items, right, join)
        condition_ast = self.qualify(on, self.items, output_rowtime=False) if on is not None else None
        left_aliases = {i.alias for i in left_items}
        from_where = False
        if join_type == "CROSS" and not asof:
            condition_ast = self.where_condition(right, left_aliases)
            if condition_ast is not None:
                join_type, from_where = "INNER", True
        asof_part = None
        if asof:
            condition_ast, asof_part = self.asof_condition(condition_ast, left_aliases, right, join)
        condition = split(condition_ast, left_aliases, right.alias, self.where, to_sql)
        if asof_part:
            condition = replace(condition, asof=asof_part)
        if from_where:
            condition = replace(condition, from_where=True)
        kind = self.classify(join, join_type, asof, left_items, right, condition, condition_ast)
        condition = self.with_window_bounds(kind, condition, left_items, right)
        line, col = self.where.position(join)
        self.joins.append(
            m.Join(
                join_type=join_type,
                kind=kind,
                right=right.alias,
                left_inputs=tuple(i.alias for i in left_items),
                condition=condition,
                using=tuple(using),
                natural=natural,
                state=describe_state(kind, join_type, left_items, right, condition),
                line=line,
                col=col,
            )
        )

    def where_condition(self, right: _Item, left_aliases: set[str]) -> exp.Expression | None:
        """For a CROSS or comma join, the WHERE conjuncts that relate the new input to earlier
        ones. For inner pairs WHERE and ON agree (SEMANTICS §5), and as keys they keep the
        join an equi-join instead of a cross product."""
        where = self.select.args.get("where")
        found = None
        for part in conjuncts(where.this if where is not None else None):
            try:
                q = self.qualify(part, self.items, output_rowtime=False)
            except SqlError:
                continue  # refers to a later input or the output: stays in WHERE only
            refs = refs_of(q)
            if right.alias in refs and refs & left_aliases and refs <= left_aliases | {right.alias}:
                found = q if found is None else exp.And(this=found, expression=q)
        return found

    @staticmethod
    def is_comma(join: exp.Join) -> bool:
        return not (join.args.get("kind") or join.args.get("side") or join.args.get("method"))

    @staticmethod
    def join_type(join: exp.Join) -> tuple[str, bool, bool]:
        method = (join.text("method") or "").upper()
        side = (join.text("side") or "").upper()
        kind = (join.text("kind") or "").upper()
        if kind == "CROSS" or _QueryAnalysis.is_comma(join) and not join.args.get("on"):
            join_type = "CROSS"
        elif side in ("LEFT", "RIGHT", "FULL"):
            join_type = side
        elif kind == "OUTER":
            join_type = "FULL"  # Lenses: OUTER JOIN is the union of LEFT and RIGHT
        else:
            join_type = "INNER"
        return join_type, method == "NATURAL", method == "ASOF"

    def apply_within(self, within: Within, left_items: list[_Item], right: _Item, join) -> None:
        ms = interval_to_ms(within.this, self.where)
        streams = [i for i in (*left_items, right) if i.is_stream]
        if len(streams) < 2:
            self.where.fail("WITHIN applies to a join of two streams", within, "a stream-table join needs no window")
        for item in streams:
            if item.window_source == "OVER":
                self.where.fail(f"'{item.alias}' has both an OVER window and WITHIN", within, "use one of them")
            if item.window == RangeWindow(ms) and item.window_source == "WITHIN":
                continue
            if item is not right and len(left_items) > 1:
                # an earlier join already matched with this input's window (§3: one window per input)
                self.where.fail(
                    f"WITHIN here would change the window of '{item.alias}', which an earlier join already used",
                    within,
                    "give each input its window with OVER (RANGE INTERVAL '5' SECOND PRECEDING)",
                )
            item.window, item.window_source = RangeWindow(ms), "WITHIN"

    def natural_columns(self, left_items, right, join) -> list[str]:
        right_cols = [c for c in right.columns if c != right.relation.rowtime and c != "rowtime"]
        left_cols = [c for i in left_items for c in i.columns if c != i.relation.rowtime and c != "rowtime"]
        common = [c for c in right_cols if c in left_cols or c in self.using]
        if not common:
            self.where.fail("NATURAL JOIN: the inputs have no column in common", join, "write the condition with ON or USING")
        return common

    def using_condition(self, using, join, left_items, right, join_type) -> exp.Expression:
        parts = []
        nodes = join.args.get("using") or []
        for i, name in enumerate(using):
            node = nodes[i] if i < len(nodes) else join
            if name not in right.columns:
                self.where.fail(f"USING column '{name}' is not a column of the right input '{right.alias}'", node, f"columns of {right.alias}: {', '.join(right.columns)}")
            left_ref = self.using.get(name)
            members = self.using_members.get(name, set())
            others = [i for i in left_items if name in i.columns and i.alias not in members]
            if left_ref is not None and others:
                self.where.fail(f"USING column '{name}' is ambiguous on the left", node, f"it is the merged USING column and a column of {', '.join(o.alias for o in others)}: use ON")
            if left_ref is None:
                owners = others
                if not owners:
                    self.where.fail(f"USING column '{name}' is not a column of the left input", node, f"both sides need a column named {name}")
                if len(owners) > 1:
                    self.where.fail(f"USING column '{name}' is ambiguous on the left", node, f"it is a column of {', '.join(o.alias for o in owners)}: use ON")
                left_ref = qualified(Ref(owners[0].alias, name, False))
                members = {owners[0].alias}
            self.using_members[name] = members | {right.alias}
            right_ref = qualified(Ref(right.alias, name, False))
            parts.append(exp.EQ(this=left_ref.copy(), expression=right_ref.copy()))
            self.using[name] = exp.Coalesce(this=left_ref.copy(), expressions=[right_ref.copy()])
            if name not in self.using_order:
                self.using_order.append(name)
        condition = parts[0]
        for p in parts[1:]:
            condition = exp.And(this=condition, expression=p)
        return condition

    def key_condition(self, left_items, right, join) -> exp.Expression:
        """Lenses: a join without ON between keyed inputs joins on _key."""
        keyed = [i for i in left_items if "_key" in i.columns]
        if "_key" in right.columns and len(keyed) == 1:
            return exp.EQ(
                this=exp.Column(this=exp.to_identifier("_key"), table=ident(keyed[0].alias)),
                expression=exp.Column(this=exp.to_identifier("_key"), table=ident(right.alias)),
            )
        self.where.fail("JOIN needs a condition: ON, USING or NATURAL", join, "write JOIN b ON a.k = b.k (CROSS JOIN pairs every row)")

    def asof_condition(self, condition, left_aliases, right, join):
        if condition is None:
            self.where.fail("ASOF JOIN needs ON with an equality and one inequality", join, "ON a.k = b.k AND b.t <= a.t")
        inequalities = []
        for part in conjuncts(condition):
            if isinstance(part, (exp.LT, exp.LTE, exp.GT, exp.GTE)):
                a, b = refs_of(part.this), refs_of(part.expression)
                if a and b and ((a <= left_aliases and b == {right.alias}) or (b <= left_aliases and a == {right.alias})):
                    inequalities.append(part)
        if len(inequalities) != 1:
            self.where.fail("ASOF JOIN needs exactly one inequality between the two sides", condition, "e.g. ON a.k = b.k AND b.t <= a.t")
        part = inequalities[0]
        op = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}[type(part)]
        lhs, rhs = part.this, part.expression
        if refs_of(lhs) == {right.alias}:  # write it as left OP right
            lhs, rhs, op = rhs, lhs, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
        rest = [p for p in conjuncts(condition) if p is not part]
        remaining = None
        for p in rest:
            remaining = p if remaining is None else exp.And(this=remaining, expression=p)
        return remaining, (to_sql(lhs), op, to_sql(rhs))

    # ------------------------------------------------------------------ classification
    def classify(self, join, join_type, asof, left_items, right, condition, condition_ast) -> str:
        left_stream = [i for i in left_items if i.is_stream]
        if right.temporal:
            return self.check_temporal(join, join_type, left_stream, right, condition)
        if asof:
            if not condition.keys:
                self.where.fail("ASOF JOIN needs at least one equality between the two sides", join, "ON a.k = b.k AND b.t <= a.t")
            if join_type not in ("INNER", "LEFT"):
                self.where.fail(f"ASOF {join_type} JOIN is not supported", join, "use ASOF JOIN or ASOF LEFT JOIN")
            if not right.is_stream:
                if not left_stream or len(left_items) != 1:
                    self.where.fail("an ASOF join against a table looks up one stream's rows", join, "FROM stream s ASOF JOIN table t ON ...")
                return m.ASOF_TABLE
            return m.ASOF
        if right.time_window or any(i.time_window for i in left_items):
            return self.check_window_join(join, left_items, right, condition)
        if left_stream and right.is_stream:
            return self.stream_stream_kind(join, left_items, right, condition)
        if left_stream or right.is_stream:
            return self.check_stream_table(join, join_type, left_items, right, condition, condition_ast)
        return m.TABLE_TABLE

    def check_temporal(self, join, join_type, left_stream, right, condition) -> str:
        if join_type not in ("INNER", "LEFT"):
            self.where.fail(f"a process-time temporal join is INNER or LEFT, not {join_type}", join, "use JOIN or LEFT JOIN ... FOR SYSTEM_TIME AS OF PROCTIME()")
        if not left_stream:
            self.where.fail("a process-time temporal join needs a stream on the left", join, "the left side is looked up row by row")
        key_columns = {r.split(".")[-1].strip('"') for _, r in condition.keys}
        pk = set(right.relation.primary_key)
        if pk and not pk <= key_columns:
            self.where.fail(
                f"the condition must cover the primary key of '{right.relation.name}' ({', '.join(sorted(pk))})",
                join.args.get("on") or join,
                "join on every primary-key column: ON s.k = t.k",
            )
        if not pk and right.relation.option("connector") != "postgres":
            self.where.fail(
                f"'{right.relation.name}' declares no PRIMARY KEY, which a temporal join needs",
                join.this,
                "declare it: CREATE TABLE t (id INT PRIMARY KEY, ...), or read it from PostgreSQL (connector = 'postgres')",
            )
        if not condition.keys:
            self.where.fail("a temporal join must be an equi-join on the table's key", join, "ON s.k = t.k")
        return m.TEMPORAL

    def check_window_join(self, join, left_items, right, condition) -> str:
        windowed = [i for i in (*left_items, right) if i.time_window]
        if not right.time_window or len(windowed) != 2 or len(left_items) != 1:
            self.where.fail("a window join joins two TUMBLE (or two HOP) inputs", join, "FROM TUMBLE(a, ts, size) JOIN TUMBLE(b, ts, size) ON ...")
        a, b = windowed[0].time_window, windowed[1].time_window
        if (a.function, a.size_ms, a.slide_ms, a.offset_ms % a.slide_ms) != (b.function, b.size_ms, b.slide_ms, b.offset_ms % b.slide_ms):
            self.where.fail("a window join needs the same window function, size and offset on both sides", join,
                            "use equal windows, e.g. TUMBLE(..., INTERVAL '1' MINUTE) twice")
        # equal windows: equal starts and equal ends say the same (Flink and RisingWave write both)
        same_window = any(_column_name(lk) == _column_name(rk) and _column_name(lk) in ("window_start", "window_end")
                          for lk, rk in condition.keys)
        if not same_window:
            self.where.fail("a window join must join on window_start (or window_end)", join.args.get("on") or join,
                            f"add AND {left_items[0].alias}.window_start = {right.alias}.window_start")
        return m.WINDOW_TVF

    def stream_stream_kind(self, join, left_items, right, condition) -> str:
        explicit = [i for i in (*left_items, right) if i.is_stream and i.window_source in ("OVER", "WITHIN")]
        # a time *range* (bounded on both sides) makes an interval join (§8); a one-sided
        # comparison is an ordinary condition on top of the default CURRENT ROW windows (§3)
        bounds = [b for b in condition.time_bounds if b.origin == "condition" and b.low_ms is not None and b.high_ms is not None]
        if explicit or not bounds:
            return m.STREAM_STREAM_WINDOW
        self.derive_interval_windows(join, left_items, right, bounds)
        return m.INTERVAL

    def derive_interval_windows(self, join, left_items, right, bounds) -> None:
        """SEMANTICS §8: an interval join matches like the equivalent windows."""
        if len(bounds) != 1:
            self.where.fail(
                "an interval join bounds the new input's time against one earlier input",
                join.args.get("on") or join,
                "e.g. a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE",
            )
        bound = bounds[0]
        left = next(i for i in left_items if i.alias == bound.left)
        # right - left in [low, high]  <=>  left - right in [-high, -low] = [b_r - a_l, a_r - b_l]
        lo, hi = -bound.high_ms, -bound.low_ms
        if lo <= 0 <= hi:
            lw, rw = RangeWindow(-lo), RangeWindow(hi)
        elif lo > 0:
            lw, rw = CURRENT_ROW, RangeWindow(hi, lo)
        else:
            lw, rw = RangeWindow(-lo, -hi), CURRENT_ROW
        for item, window in ((left, lw), (right, rw)):
            used_earlier = item is not right and len(left_items) > 1
            if used_earlier and item.window != window:  # §3: one window per input, for every join
                self.where.fail(
                    f"this interval condition would change the window of '{item.alias}', which an earlier join already used",
                    join.args.get("on") or join,
                    "an input may take part in one interval condition; use OVER windows for multi-way joins",
                )
            item.window, item.window_source = window, "interval condition"

    def check_stream_table(self, join, join_type, left_items, right, condition, condition_ast) -> str:
        table_right = not right.is_stream
        on = join.args.get("on") or join
        if not condition.keys:
            self.where.fail("stream-table join must be an equi-join", on, "join on an equality between a stream column and a table column, e.g. ON s.k = t.k")
        table_aliases = {right.alias} if table_right else {i.alias for i in left_items}
        for part in conjuncts(condition_ast):
            refs = refs_of(part)
            if refs & table_aliases and refs - table_aliases and not _is_key(part, condition):
                self.where.fail(
                    "a stream-table join condition beyond its equalities may refer to one side only",
                    part,
                    "move the cross-side comparison to WHERE, or make it an equality",
                )
        table_preserved = join_type == "FULL" or (join_type == "RIGHT" and table_right) or (join_type == "LEFT" and not table_right)
        streams = [i for i in (*left_items, right) if i.is_stream]
        if table_preserved:
            if not (len(streams) == 1 and isinstance(streams[0].window, BucketWindow)):
                self.where.fail(
                    "an outer join must be one-sided: it cannot detect table rows that never matched a stream row",
                    join,
                    "preserve the stream (stream LEFT JOIN table, table RIGHT JOIN stream), or bucket the stream: "
                    "OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW)",
                )
            return m.BUCKETED
        if table_right:
            for part in conjuncts(condition_ast):
                if refs_of(part) == {right.alias} and join_type == "INNER":
                    right.pushed.append(to_sql(part))
        return m.SNAPSHOT

    def with_window_bounds(self, kind, condition, left_items, right) -> m.Condition:
        """Add the co-presence bounds the RANGE windows imply (SEMANTICS §4)."""
        if kind != m.STREAM_STREAM_WINDOW or not isinstance(right.window, RangeWindow):
            return condition
        bounds = list(condition.time_bounds)
        for item in left_items:
            if item.is_stream and isinstance(item.window, RangeWindow):
                lw, rw = item.window, right.window
                origin = "WITHIN" if item.window_source == right.window_source == "WITHIN" else "windows"
                bounds.append(m.TimeBound(item.alias, right.alias, lw.lag_ms - rw.size_ms, lw.size_ms - rw.lag_ms, origin))
        return replace(condition, time_bounds=tuple(merge_bounds(bounds)))

    # ------------------------------------------------------------------ SELECT list, WHERE, GROUP BY
    def projection(self, has_stream: bool) -> tuple[m.OutputColumn, ...]:
        columns: list[tuple[str, str, str | None]] = []  # (name, sql, name if a star brought it twice)
        for i, node in enumerate(self.select.expressions):
            if isinstance(node, exp.Star):
                columns.extend(self.star(None))
            elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                columns.extend(self.star(node))
            else:
                expr = node.this if isinstance(node, exp.Alias) else node
                q = self.qualify(expr, self.items, output_rowtime=True)
                if isinstance(node, exp.Alias):
                    name = ident_name(node.args["alias"])
                elif isinstance(expr, exp.Column):
                    name = ident_name(expr.this)
                else:
                    name = f"_c{i}"
                columns.append((name, to_sql(q), None))
        seen: dict[str, int] = {}
        for name, _, _ in columns:
            seen[name] = seen.get(name, 0) + 1
        out = []
        for name, sql, star_name in columns:
            if seen[name] > 1:
                if star_name is None:
                    node = next((n for n in self.select.expressions if n.alias_or_name.lower() == name), self.select)
                    self.where.fail(f"duplicate output column '{name}'", node, "give each output column its own name with AS")
                name = star_name  # alias.col; a USING column keeps its plain name
            out.append(m.OutputColumn(name, sql))
        return tuple(out)

    def star(self, node: exp.Column | None) -> list[tuple[str, str, str]]:
        if node is not None:
            qualifier = ident_name(node.args.get("table"))
            items = [i for i in self.items if i.alias == qualifier]
            if not items:
                self.where.fail(f"unknown input '{qualifier}' in {qualifier}.*", node, f"inputs: {', '.join(i.alias for i in self.items)}")
            item = items[0]
            return [self.star_column(item, c) for c in _star_columns(item)]
        out = [(name, to_sql(self.using[name]), name) for name in self.using_order]
        for item in self.items:
            for c in _star_columns(item):
                if item.alias not in self.using_members.get(c, ()):
                    out.append(self.star_column(item, c))
        return out

    @staticmethod
    def star_column(item: _Item, c: str) -> tuple[str, str, str]:
        sql = to_sql(qualified(Ref(item.alias, c, c == item.relation.rowtime)))
        return c, sql, f"{item.alias}.{c}"

    def filter(self, has_stream: bool) -> str | None:
        where = self.select.args.get("where")
        if where is None:
            return None
        q = self.qualify(where.this, self.items, output_rowtime=True)
        joins_by_right = {j.right: j for j in self.joins}
        for part in conjuncts(q):
            refs = refs_of(part)
            if len(refs) == 1:
                (alias,) = refs
                item = next(i for i in self.items if i.alias == alias)
                join = joins_by_right.get(alias)
                preserved_elsewhere = join is not None and join.join_type in ("LEFT", "FULL")
                if not item.is_stream and not preserved_elsewhere and not item.temporal:
                    item.pushed.append(to_sql(part))
        return to_sql(q)

    def aggregation(self, has_stream: bool) -> m.Aggregation | None:
        group = self.select.args.get("group")
        has_aggregates = any(
            not a.find_ancestor(exp.Window) for n in self.select.expressions for a in n.find_all(*_AGGREGATES)
        )
        if group is None and not has_aggregates:
            return None
        keys = [self.qualify(k, self.items, output_rowtime=True) for k in (group.expressions if group else [])]
        bucket, unit, window = None, None, None
        for k in keys:
            if isinstance(k, exp.Floor) and k.args.get("to") and _is_rowtime(k.this):
                bucket, unit = to_sql(k), k.text("to").upper()
            elif isinstance(k, exp.Column) and k.name == "window_start":
                item = next((i for i in self.items if i.alias == k.table and i.time_window), None)
                if item is not None:
                    window = item.time_window
                    bucket, unit = to_sql(k), f"{window.function} {window.size_ms} ms"
        return m.Aggregation(bucket=bucket, bucket_unit=unit, keys=tuple(to_sql(k) for k in keys), window=window)


def _column_name(sql: str) -> str:
    """The column of a qualified reference as the plan writes it (`l.window_end` -> window_end)."""
    return sql.rsplit(".", 1)[-1].strip('"')


def _is_rowtime(node: exp.Expression) -> bool:
    """The output ROWTIME, or a column resolved to an input's rowtime."""
    if not isinstance(node, exp.Column):
        return False
    ref = node.meta.get("ref")
    return ref.is_rowtime if ref is not None else node.name == OUTPUT_ROWTIME


def _star_columns(item: _Item) -> tuple[str, ...]:
    """`*` brings the declared columns; an implicit ROWTIME is selected by name only."""
    implicit = item.relation.rowtime if item.relation.implicit_rowtime else None
    return tuple(c for c in item.columns if c != implicit)


def _is_current_row(node) -> bool:
    return node is not None and (node == "CURRENT ROW" or (isinstance(node, (str, exp.Var)) and str(getattr(node, "name", node)).upper() == "CURRENT ROW"))


def _is_zero(node) -> bool:
    return isinstance(node, exp.Literal) and node.is_number and float(node.name) == 0


def _is_key(part, condition) -> bool:
    return isinstance(part, exp.EQ) and any(to_sql(part.this) in pair and to_sql(part.expression) in pair for pair in condition.keys)

