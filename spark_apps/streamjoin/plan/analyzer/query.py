"""One SELECT: its FROM items and their windows, its joins in order, its select list, WHERE and
GROUP BY, as a `model.Query`."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from sqlglot import exp
from sqlglot.errors import ParseError

import streamjoin.plan.analyzer.classify as classify
import streamjoin.plan.analyzer.joins as joins
import streamjoin.plan.analyzer.subqueries as subqueries
from streamjoin.dialect import SelectKind, Within
from streamjoin.dialect.profiles import REGULAR, Profile
from streamjoin.plan.analyzer.analytics import analytics_of
from streamjoin.plan.analyzer.buckets import clock_window, stepped, window_end_bucket
from streamjoin.plan.analyzer.names import Item, Scope, is_rowtime
from streamjoin.plan.analyzer.ordering import order_within, table_sort
from streamjoin.plan.analyzer.percentiles import within_group
from streamjoin.plan.analyzer.window_specs import WindowSpecs
from streamjoin.plan.conditions import split
from streamjoin.plan.model import (
    Aggregation,
    Emit,
    Input,
    Join,
    JoinKind,
    JoinType,
    Kind,
    OutputColumn,
    Query,
    Relation,
    TimeWindowFunction,
    WindowFunction,
)
from streamjoin.plan.scope import Located, ident_name, interval_to_ms, signed_interval
from streamjoin.plan.state import describe_state
from streamjoin.plan.windows import CURRENT_ROW, UnboundedWindow, interval_ms


class Relations(Protocol):
    """What a query's analysis asks of the script's analysis (`statements.Analyzer`)."""

    where: Located
    profile: Profile

    def relation(self, table: exp.Table) -> Relation: ...

AGGREGATES = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg, exp.WithinGroup)  # WITHIN GROUP: PERCENTILE_DISC / _CONT


class QueryAnalysis:
    """Analyses one SELECT of the script (`Analyzer` resolves the relations it names)."""

    def __init__(self, analyzer: Relations, select: exp.Select, named_windows: dict):
        self.a = analyzer
        self.where = analyzer.where
        self.select = within_group(select)
        self.windows = WindowSpecs(self.where, named_windows)
        self.scope = Scope(self.where)
        self.joins: list[Join] = []

    @property
    def items(self) -> list[Item]:
        return self.scope.items

    def run(self, name: str, sink: str | None) -> Query:
        select = self.select
        self.no_nested_queries()
        self.add_item(select.args["from_"].this, None)
        for join in select.args.get("joins") or []:
            self.join(join)
        has_stream = any(i.is_stream for i in self.items)
        kind_node = select.args.get("hint")
        select_kind = kind_node.name if isinstance(kind_node, SelectKind) else None
        if select_kind == "STREAM" and not has_stream:
            self.where.fail("SELECT STREAM needs at least one stream input", kind_node, "use SELECT (or SELECT TABLE) over tables")
        emit = self.emit(select.args.get("emit"))
        output = self.projection()
        return Query(
            name=name,
            kind=Kind.TABLE if select_kind == "TABLE" or not has_stream else Kind.STREAM,
            select_kind=select_kind,
            inputs=tuple(self.freeze(i) for i in self.items),
            joins=tuple(self.joins),
            output=output,
            where=self.filter(),
            aggregation=self.aggregation(output),
            emit=emit,
            sink=sink,
            disorder_ms=self.disorder(output, has_stream and select_kind != "TABLE"),
            distinct=self.distinct(),
            unrun=(unrun := self.unrun(order := order_within(self.select, self.scope, output))), order_within=order or (),
            **table_sort(self.select, self.scope, output, unrun),
            having=self.having(),
            analytics=analytics_of(output, self.windows.named, lambda n: self.scope.qualify(n, output_rowtime=True),
                                   self.where),
        )

    def having(self) -> exp.Expression | None:
        node = self.select.args.get("having")
        if node is None:
            return None
        if self.select.args.get("group") is None:
            self.where.fail("HAVING needs GROUP BY", node, "group the rows: GROUP BY FLOOR(ROWTIME TO MINUTE), k")
        return self.scope.qualify(node.this, output_rowtime=True)

    def unrun(self, ordered: tuple | None) -> tuple[str, ...]:
        """ORDER BY (but a t-sort, or the rowtime ascending and then output columns: `ordered`, the
        order rows leave in), LIMIT, OFFSET, FETCH and QUALIFY, as written."""
        out = []
        for key in ("limit", "offset", "fetch", "qualify"):
            node = self.select.args.get(key)
            if node is not None:
                out.append(node.sql(dialect="postgres"))
        order = self.select.args.get("order")
        if order is not None and order.args.get("within") is None and ordered is None:
            out.append(order.sql(dialect="postgres"))
        return tuple(out)

    def no_nested_queries(self) -> None:
        """A query inside an expression (`k IN (SELECT ...)`, `EXISTS (...)`, a scalar subquery) is
        refused where it is written: a stream's row would need a table's state at its instant."""
        for key in ("expressions", "where", "having", "joins", "group", "qualify"):
            value = self.select.args.get(key)
            for node in (value if isinstance(value, list) else [value]):
                if node is None:
                    continue
                nested = next((q for q in node.find_all(exp.Query) if q is not node and not isinstance(q.parent, exp.Join | exp.From)
                               and not (isinstance(q.parent, exp.Subquery) and isinstance(q.parent.parent, exp.Join | exp.From))), None)
                if nested is not None:
                    self.where.fail(f"a query inside {key.upper() if key != 'joins' else 'a join condition'} is not "
                                    "supported", nested, "write it in WHERE (EXISTS, IN, a scalar subquery), or join "
                                    "the table or view it reads")

    def distinct(self) -> tuple[exp.Expression, ...] | None:
        """SELECT DISTINCT (every output column: ()) or DISTINCT ON (expressions), None without."""
        node = self.select.args.get("distinct")
        if node is None:
            return None
        on = node.args.get("on")
        if on is None:
            return ()
        return tuple(self.scope.qualify(e, output_rowtime=True) for e in (on.expressions if isinstance(on, exp.Tuple) else [on]))

    def emit(self, written: exp.Expression | None) -> Emit:
        """The EMIT clause; a regular join's results change: an outer one's are a changelog (CHANGES), an inner one's appended (EAGER)."""
        regular = [j for j in self.joins if j.kind == JoinKind.REGULAR]
        in_regular = {a for j in regular for a in (*j.left_inputs, j.right)}
        for item in self.items:
            if item.relation.changing and item.alias not in in_regular and self.joins:  # (hidden: a subquery's view)
                self.where.fail(("a subquery over a stream that aggregates it changes as its rows arrive" if item.hidden else
                                 f"'{item.relation.name}' changes by its changelog (rows updated and deleted)")
                                + ": it is joined by a regular join only", self.select.args["from_"] if item.hidden else item.node,
                                "read the outer streams whole: FROM s OVER (RANGE UNBOUNDED PRECEDING)" if item.hidden else
                                "join it without a window or time bound (a regular join), which follows its changes")
        if any(i.relation.changing and i.alias not in in_regular for i in self.items):
            return Emit.CHANGES  # read alone (aggregated, filtered): a changelog (`run` follows one through regular joins only yet)
        if not regular:
            return Emit(written.name) if written else Emit.FINAL
        if written is not None and written.name != Emit.CHANGES:
            self.where.fail(f"EMIT {written.name} needs joins bounded in time: a regular join's results change as rows "
                            "arrive", written, "drop the EMIT clause (its rows are a changelog), or bound the join in time")
        changing = any(i.relation.changing for i in self.items)  # its updates and deletes withdraw results
        appended = all(j.join_type == JoinType.INNER for j in regular) and not changing
        return Emit.EAGER if appended and written is None else Emit.CHANGES

    def disorder(self, output: tuple[OutputColumn, ...], stream: bool) -> int | None:
        """A stream query that selects another expression AS ROWTIME promotes it (s-Server): the
        disorder its rows may have, its t-sort's `ORDER BY expr WITHIN interval`, else 0. None: its
        rowtime is its inputs'. A t-sort must sort by the promoted expression."""
        order = self.select.args.get("order")
        within = order.args.get("within") if order is not None else None
        promoted = next((c for c in output if c.name == "rowtime" and not is_rowtime(c.expression)), None)
        if within is None:
            # a GROUP BY's rows already take their bucket's start (`FLOOR(ROWTIME TO MINUTE) AS ROWTIME`)
            grouped = self.select.args.get("group") is not None
            return 0 if promoted is not None and stream and not grouped else None
        if promoted is None or not stream:
            self.where.fail("ORDER BY ... WITHIN (s-Server's t-sort) sorts rows by a new rowtime: this query selects "
                            "none (expr AS ROWTIME)", within,
                            "select the column to sort by AS ROWTIME, or declare it as the input's rowtime "
                            "(rowtime = 'eventtime') with the disorder it allows (lateness = '30 SECONDS')")
        written = next(n for n in self.select.expressions if n.alias_or_name.lower() == "rowtime")
        first = order.expressions[0].this
        if _bare(first) != _bare(written.this if isinstance(written, exp.Alias) else written) \
                and not (isinstance(first, exp.Column) and ident_name(first.this) == "rowtime" and not first.table):
            self.where.fail(f"the t-sort orders by {first.sql()}, not by the new rowtime {written.sql()}", first,
                            "ORDER BY the expression selected AS ROWTIME")
        if len(order.expressions) > 1 or order.expressions[0].args.get("desc"):
            self.where.fail("a t-sort orders by the new rowtime alone, ascending", order, "ORDER BY the rowtime WITHIN ...")
        return interval_to_ms(within.this if isinstance(within, Within) else within, self.where)

    def freeze(self, item: Item) -> Input:
        line, col = self.where.position(item.node)
        return Input(
            alias=item.alias,
            relation=item.relation.name,
            kind=item.relation.kind,
            columns=item.columns,
            rowtime=item.relation.rowtime,
            window=item.window if item.is_stream and not item.time_window else None,
            window_source=item.window_source if item.is_stream else "table",
            temporal=item.temporal,
            time_window=item.time_window,
            line=line,
            col=col,
        )

    # ------------------------------------------------------------------ FROM items
    def add_item(self, node: exp.Expression, within: Within | None) -> Item:
        if not isinstance(node, exp.Table):
            self.where.fail(
                f"unsupported FROM item: {node.key.upper()}",
                node,
                "a FROM item is a stream, a table, a view, a subquery or TUMBLE/HOP(...)",
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
        item = Item(alias=alias, relation=relation, node=node, time_window=time_window)
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
            item.window, item.window_source = self.windows.window(window, relation.rowtime), "OVER"
        elif within is not None:
            item.window_source = "WITHIN"
        elif item.is_stream:
            item.window = CURRENT_ROW
        self.items.append(item)
        return item

    def size_ms(self, node: exp.Expression) -> int | None:
        """A window size: INTERVAL '1' MINUTE, or RisingWave's interval text '10 MINUTES'."""
        if isinstance(node, exp.Interval):
            return interval_to_ms(node, self.where)
        if isinstance(node, exp.Literal) and node.is_string:
            try:
                return interval_ms(node.name, None)
            except ValueError:
                return None
        return None

    def time_window_function(self, func: exp.Expression) -> tuple[Relation, TimeWindowFunction]:
        fname = (func.name or func.sql(dialect="postgres").split("(")[0]).upper()
        args = list(func.expressions) if isinstance(func, exp.Anonymous) else list(func.args.values())
        if fname == "TABLE" and args and isinstance(args[0], exp.Func | exp.Anonymous):  # KDA: TABLE(FN(CURSOR(...)))
            inner = args[0]
            fname = (inner.name if isinstance(inner, exp.Anonymous) else inner.sql_name()).upper()
        if fname == "STREAM" and args:  # s-Server: STREAM(fn(...)) reads a table function's rows
            called = args[0].sql(dialect="postgres")
            self.where.fail(f"STREAM({called.split('(')[0]}(...)) reads an s-Server table function's rows "
                            "(a UDX or s-Server's own telemetry); streamjoin runs no s-Server functions", func,
                            "declare the rows it gives as a stream (CREATE STREAM ... WITH (connector = ...)) and read that")
        if fname not in ("TUMBLE", "HOP"):
            self.where.fail(f"unsupported table function {fname}", func, "TUMBLE(src, col, size) and HOP(src, col, slide, size) are supported in FROM")
        expected = 3 if fname == "TUMBLE" else 4
        if len(args) not in (expected, expected + 1) or not isinstance(args[0], (exp.Column, exp.Table)):
            self.where.fail(f"{fname} takes {expected} arguments, or {expected + 1} with an offset", func,
                            "TUMBLE(src, col, size [, offset]) or HOP(src, col, slide, size [, offset]), "
                            "e.g. TUMBLE(src, col, INTERVAL '1' MINUTE)")
        offset = 0
        if len(args) == expected + 1:
            offset = signed_interval(args.pop(), f"the offset of {fname}", self.where)
        relation = self.a.relation(exp.Table(this=args[0].this))
        if relation.kind != Kind.STREAM and self.a.profile.name != "risingwave":  # RisingWave windows tables' rows too
            self.where.fail(f"{fname} applies to a stream; '{relation.name}' is a table", args[0], "window a stream")
        column = ident_name(args[1])
        if column not in relation.column_names():
            self.where.fail(f"unknown column '{column}' in {fname}", args[1], f"columns are: {', '.join(relation.column_names())}")
        sizes = [self.size_ms(a) for a in args[2:]]
        if None in sizes or min(sizes) <= 0:
            self.where.fail(f"{fname} sizes must be positive intervals", func, "e.g. INTERVAL '1' MINUTE")
        size, slide = (sizes[0], sizes[0]) if fname == "TUMBLE" else (sizes[1], sizes[0])
        return relation, TimeWindowFunction(WindowFunction(fname), column, size, slide, offset)

    def regular(self, kind: JoinKind, join: exp.Join, items: list[Item]) -> JoinKind:
        """A regular join (every row, forever): UNBOUNDED windows on both streams, or, in a profile where a
        join of two streams without a time bound means it (RisingWave), no window at all, or windows that
        never close (TUMBLE / HOP on a column that is not the rowtime: RisingWave pairs them as rows come)."""
        streams = [i for i in items if i.is_stream]
        if any(isinstance(i.window, UnboundedWindow) for i in streams):  # the regular join, spelt out
            if kind != JoinKind.STREAM_STREAM_WINDOW or len(streams) != 2 or not all(  # (a changelog needs none)
                    isinstance(i.window, UnboundedWindow) or i.relation.changing for i in streams):
                self.where.fail("an UNBOUNDED window makes a regular join of two streams: both need it, and no time "
                                "bound", join, "OVER (RANGE UNBOUNDED PRECEDING) on both streams, or bound both in time")
        elif kind == JoinKind.WINDOW_TVF and self.a.profile.windowless == REGULAR and any(
                i.time_window and i.time_window.column != i.relation.rowtime for i in streams):
            pass
        elif not (kind == JoinKind.STREAM_STREAM_WINDOW and self.a.profile.windowless == REGULAR
                  and not any(i.window_source in ("OVER", "WITHIN") for i in items)):
            return kind
        for item in streams:
            item.window_source = "regular"
        return JoinKind.REGULAR  # over the whole history: its results change as rows arrive

    # ------------------------------------------------------------------ joins
    def join(self, join: exp.Join) -> None:
        where = self.where
        within = join.args.get("within")
        left_items = list(self.items)
        right = self.add_item(join.this, within)
        join_type, natural, asof = joins.join_type(join)
        right.hidden = bool(join.meta.get(subqueries.HIDDEN)) or join_type.filters
        if join_type.filters and (join.text("side") or "LEFT").upper() != "LEFT":
            where.fail(f"{join.text('side').upper()} {join.text('kind').upper()} JOIN is not supported", join,
                       f"swap the inputs: b LEFT {join.text('kind').upper()} JOIN a")
        on, using = join.args.get("on"), [ident_name(u) for u in join.args.get("using") or []]
        if join_type == JoinType.CROSS and (on is not None or using):
            where.fail("CROSS JOIN takes no ON or USING condition", on if on is not None else join.args["using"][0], "drop the condition, or write JOIN ... ON to join on it")
        if within is not None:
            joins.apply_within(where, within, left_items, right)
        if natural:
            using = joins.natural_columns(self.scope, left_items, right, join)
        if using:
            on = joins.using_condition(self.scope, using, join, left_items, right)
        elif on is None and join_type != JoinType.CROSS and not joins.is_comma(join):
            on = joins.key_condition(where, left_items, right, join)
        condition_ast = self.scope.qualify(on) if on is not None else None
        left_aliases = {i.alias for i in left_items}
        from_where = False
        if join_type == JoinType.CROSS and not asof:
            condition_ast = joins.where_condition(self.scope, self.select, right, left_aliases)
            if condition_ast is not None:
                join_type, from_where = JoinType.INNER, True
        asof_part = None
        if asof:
            condition_ast, asof_part = joins.asof_condition(where, condition_ast, left_aliases, right, join)
        condition = replace(split(condition_ast, left_aliases, right.alias, where), asof=asof_part, from_where=from_where)
        kind = classify.classify(where, join, join_type, asof, left_items, right, condition)
        kind = self.regular(kind, join, [*left_items, right])
        condition = classify.with_window_bounds(kind, condition, left_items, right)
        line, col = where.position(join)
        self.joins.append(
            Join(
                join_type=join_type,
                kind=kind,
                right=right.alias,
                left_inputs=tuple(i.alias for i in left_items),
                condition=condition,
                using=tuple(using),
                natural=natural,
                state=describe_state(kind, join_type, left_items, right, condition),
                subquery=join.meta.get(subqueries.SUBQUERY),
                line=line,
                col=col,
            )
        )

    # ------------------------------------------------------------------ SELECT list, WHERE, GROUP BY
    def projection(self) -> tuple[OutputColumn, ...]:
        columns: list[tuple[str, exp.Expression, str | None]] = []  # (name, expression, name if a star brought it twice)
        for i, node in enumerate(self.select.expressions):
            if isinstance(node, exp.Star):
                columns.extend(self.scope.star(None, node))
            elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                columns.extend(self.scope.star(node, node.this))
            elif isinstance(node, exp.Dot) and isinstance(node.expression, exp.Star):  # RisingWave: (rec).*
                columns.extend(self.record_star(node.this.unnest() if isinstance(node.this, exp.Paren) else node.this))
            else:
                expr = node.this if isinstance(node, exp.Alias) else node
                q = self.scope.qualify(expr, output_rowtime=True)
                if isinstance(node, exp.Alias):
                    name = ident_name(node.args["alias"])
                elif isinstance(expr, exp.Column):
                    name = ident_name(expr.this)
                else:
                    name = f"_c{i}"
                columns.append((name, q, None))
        seen: dict[str, int] = {}
        for name, _, _ in columns:
            seen[name] = seen.get(name, 0) + 1
        out = []
        for name, expression, star_name in columns:
            if seen[name] > 1:
                if star_name is None:
                    node = next((n for n in self.select.expressions if n.alias_or_name.lower() == name), self.select)
                    self.where.fail(f"duplicate output column '{name}'", node, "give each output column its own name with AS")
                name = star_name  # alias.col; a USING column keeps its plain name
            out.append(OutputColumn(name, expression))
        return tuple(out)

    def record_star(self, node: exp.Expression) -> list[tuple[str, exp.Expression, str | None]]:
        """`(col).*`: each field of a STRUCT column, as a column of its own named by the field."""
        column = self.scope.qualify(node, output_rowtime=False)
        ref = column.meta.get("ref") if isinstance(column, exp.Column) else None
        item = next((i for i in self.items if ref is not None and i.alias == ref.alias), None)
        declared = next((c.type for c in item.relation.columns if c.name == ref.column), "") if item else ""
        try:
            parsed = exp.DataType.build(declared, dialect="risingwave") if declared else None
        except ParseError:  # not a type sqlglot reads
            parsed = None
        if parsed is None or parsed.this != exp.DataType.Type.STRUCT:
            self.where.fail(f"({node.sql()}).* selects the fields of a STRUCT column; its type is {declared or 'not declared'}",
                            node, "declare the column STRUCT<field TYPE, ...> where its input is declared")
        return [(f.name, exp.Dot(this=column.copy(), expression=exp.to_identifier(f.name)), None) for f in parsed.expressions]

    def filter(self) -> exp.Expression | None:
        where = self.select.args.get("where")
        return self.scope.qualify(where.this, output_rowtime=True) if where is not None else None

    def aggregation(self, output: tuple[OutputColumn, ...] = ()) -> Aggregation | None:
        group = self.select.args.get("group")
        has_aggregates = any(
            not a.find_ancestor(exp.Window) for n in self.select.expressions for a in n.find_all(*AGGREGATES)
        )
        if group is None and not has_aggregates:
            return None
        keys = [self.scope.qualify(k, output_rowtime=True) for k in (group.expressions if group else [])]
        bucket, unit, window = None, None, None
        for k in keys:
            if isinstance(k, exp.Floor) and k.args.get("to") and is_rowtime(k.this):
                bucket, unit = k, k.text("to").upper()
            elif stepped(k, [o.expression for o in output]) is not None:
                size, column = stepped(k, [o.expression for o in output])
                window = TimeWindowFunction(WindowFunction.TUMBLE, column, size, size)
                bucket, unit = k, f"STEP {size} ms"
            elif isinstance(k, exp.Column) and k.name == "window_start":
                item = next((i for i in self.items if i.alias == k.table and clock_window(i)), None)
                if item is not None:
                    window = item.time_window
                    bucket, unit = k, f"{window.function} {window.size_ms} ms"
        if bucket is None:  # GROUP BY window_end alone (RisingWave's habit): its window_start is the bucket
            bucket, window = window_end_bucket(keys, {i.alias: i.time_window for i in self.items if clock_window(i)})
            unit = f"{window.function} {window.size_ms} ms" if window is not None else None
        return Aggregation(bucket=bucket, bucket_unit=unit, keys=tuple(keys), window=window)


def _bare(node: exp.Expression) -> str:
    """An expression's SQL with its columns unqualified (`s.eventtime` and `eventtime` alike)."""
    node = node.copy()
    for col in node.find_all(exp.Column):
        col.set("table", None)
    return node.sql().lower()
