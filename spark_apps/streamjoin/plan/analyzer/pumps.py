"""Applications: in-application streams filled by pumps (Kinesis Analytics, s-Server).

    CREATE OR REPLACE STREAM "DESTINATION_SQL_STREAM" (ticker VARCHAR(4), price DOUBLE);
    CREATE OR REPLACE PUMP "STREAM_PUMP" AS INSERT INTO "DESTINATION_SQL_STREAM"
      SELECT STREAM ticker, price FROM "SOURCE_SQL_STREAM_001" WHERE price > 10;

An in-application stream is declared without a connector. The pump that fills it is its query:
a view named after the stream, its columns named as the stream declares them, in order (or as
`INSERT INTO s (a, b)` lists them; a ROWTIME column is the stream's own rowtime). The stream that
no pump reads is the application's output, and its pump is the final query (into a CREATE SINK,
the query's INSERT INTO). With several such streams, each is an output query named after its
stream, its rows led by a `stream` column naming it (a sink's rows go to the sink as they are). Declarations are read first, then views, pumps and queries run in the
order their inputs are filled, whatever their order in the file. Several pumps into one stream
fill it with the UNION ALL of their queries (fan-in). Rejected with their position:
a cycle, a stream read but never filled, two pumps into one sink, several output streams and a
final query, a pump into a stream read from a connector, a column count that differs.
"""

from __future__ import annotations

import difflib
from dataclasses import replace

from sqlglot import exp

from streamjoin.plan.model import Kind, Pump, Relation
from streamjoin.plan.scope import ident_name, relation_name


def is_pump(st: exp.Expression) -> bool:
    return isinstance(st, exp.Create) and (st.text("kind") or "").upper() == "PUMP"


def pump_target(pump: exp.Create) -> exp.Table:
    target = pump.expression.this
    return target.this if isinstance(target, exp.Schema) else target


def produces(st: exp.Expression) -> str | None:
    """The stream (or view) a statement fills, if any."""
    if is_pump(st):
        return relation_name(pump_target(st))
    if isinstance(st, exp.Create) and (st.text("kind") or "").upper() == "VIEW":
        return relation_name(st.this.this if isinstance(st.this, exp.Schema) else st.this)
    return None


def reads(st: exp.Expression) -> list[tuple[str, exp.Table]]:
    """The relations a statement's query reads, with where it names them."""
    query = st.expression.expression if is_pump(st) else (st.expression if isinstance(st, (exp.Create, exp.Insert)) else st)
    if not isinstance(query, exp.Expression):
        return []
    return [(relation_name(t), t) for t in query.find_all(exp.Table)]


class Application:
    """Analyses a file that holds pumps, through the file's `Analyzer` (statements.py)."""

    def __init__(self, analyzer):
        self.analyzer = analyzer
        self.where = analyzer.where

    def analyze(self, statements: list[exp.Expression]) -> None:
        later = []
        for st in statements:
            if isinstance(st, exp.Set) or (isinstance(st, exp.Create) and st.expression is None):
                self.analyzer.statement(st)
            else:
                later.append(st)
        later = self.fanned_in(later)
        read = {id(st): reads(st) for st in later}
        fills = self.targets([st for st in later if is_pump(st)], {name for names in read.values() for name, _ in names})
        produced = {produces(st) for st in later} - {None}
        self.check_filled(later, read, produced)
        read_anywhere = {name for names in read.values() for name, _ in names}
        terminal = [p for p in fills.values() if relation_name(pump_target(p)) not in read_anywhere]
        self.several = len(terminal) > 1  # each output's rows then carry a "stream" key
        if self.several and any(isinstance(st, exp.Query | exp.Insert) for st in later):
            self.where.fail("the application has several output streams and a final query as well",
                            next(st for st in later if isinstance(st, exp.Query | exp.Insert)),
                            "fill an output stream with a pump instead")
        done: set[str] = set()
        pending = list(later)
        while pending:
            ready = next((st for st in pending if all(n in done or n not in produced for n, _ in read[id(st)])), None)
            if ready is None:
                self.cycle(pending, read)
            pending.remove(ready)
            if is_pump(ready):
                self.pump(ready, terminal=any(ready is p for p in terminal))
            else:
                self.analyzer.statement(ready)
            if name := produces(ready):
                done.add(name)

    def fanned_in(self, later: list[exp.Expression]) -> list[exp.Expression]:
        """Several pumps into one in-application stream (KDA's and s-Server's fan-in): one pump of
        the UNION ALL of their queries, each named as its INSERT names the stream's columns; the
        stream's rows are every pump's rows, in rowtime order (a UNION ALL of streams)."""
        by_target: dict[str, list[exp.Create]] = {}
        for st in later:
            if is_pump(st):
                by_target.setdefault(relation_name(pump_target(st)), []).append(st)
        for name, pumps in by_target.items():
            stream = self.analyzer.relations.get(name)
            if len(pumps) < 2 or stream is None or stream.options:  # (a sink's, or a connector's: refused in targets)
                continue
            order = [c.name for c in stream.columns]
            branches = [_in_order(self.named_as_declared(_query_of(p), p.expression, stream, p), order) for p in pumps]
            union = branches[0]
            for branch in branches[1:]:
                union = exp.Union(this=union, expression=branch, distinct=False)
            merged = pumps[0].copy()
            merged.set("expression", exp.Insert(this=pump_target(pumps[0]).copy(), expression=union))
            merged.meta["pumps"] = [(relation_name(p.this), tuple(sorted({n for n, _ in reads(p)}))) for p in pumps]
            later = [merged if st is pumps[0] else st for st in later if not any(st is p for p in pumps[1:])]
        return later

    def targets(self, pumps: list[exp.Create], read: set[str]) -> dict[str, exp.Create]:
        """stream -> the pump that fills it, each target checked. A Kafka foreign stream a pump
        writes and nothing reads is the application's output topic: a sink (io.sinks.kafka_sink)."""
        relations, sinks = self.analyzer.relations, self.analyzer.sinks
        fills: dict[str, exp.Create] = {}
        for pump in pumps:
            target, pump_name = pump_target(pump), relation_name(pump.this)
            name = relation_name(target)
            if name not in relations and name not in sinks:
                close = difflib.get_close_matches(name, sorted([*relations, *sinks]), n=3)
                self.where.fail(f"pump '{pump_name}' inserts into '{name}', which is not declared", target,
                                f"did you mean {', '.join(close)}?" if close else
                                f"declare it: CREATE OR REPLACE STREAM {target.sql()} (column type, ...)")
            if (name in relations and (relations[name].option("connector") or "").lower() == "kafka"
                    and name not in read and relations[name].kind == Kind.STREAM):
                sinks[name] = replace(relations.pop(name), kind=Kind.TABLE, rowtime=None)
            if name in relations and relations[name].options:
                self.where.fail(f"pump '{pump_name}' inserts into '{name}', which reads from a connector", target,
                                "an in-application stream is declared without WITH (...)")
            if name in fills:
                self.where.fail(f"'{name}' is filled by two pumps ('{relation_name(fills[name].this)}' and '{pump_name}'): "
                                "not supported yet", target, "fill each stream with one pump")
            fills[name] = pump
        return fills

    def check_filled(self, later: list[exp.Expression], read: dict, produced: set[str]) -> None:
        """An in-application stream (no connector) that is read must be filled."""
        for st in later:
            for name, table in read[id(st)]:
                relation = self.analyzer.relations.get(name)
                if relation is not None and not relation.options and name not in produced:
                    self.where.fail(f"'{name}' is read but no pump fills it", table,
                                    f"add CREATE PUMP ... AS INSERT INTO {table.sql()} SELECT STREAM ..., "
                                    "or read a stream declared WITH (connector = ...)")

    def pump(self, pump: exp.Create, terminal: bool) -> None:
        insert, name = pump.expression, relation_name(pump_target(pump))
        select = insert.expression.unnest() if isinstance(insert.expression, exp.Subquery) else insert.expression
        for pump_name, pump_reads in pump.meta.get("pumps") or [(relation_name(pump.this), tuple(sorted({n for n, _ in reads(pump)})))]:
            self.analyzer.pumps.append(Pump(name=pump_name, target=name, reads=pump_reads))
        if name in self.analyzer.sinks:
            if self.several:
                self.output(select, name, sink=name)
            else:
                self.analyzer.final(select, sink=name)
            return
        select = self.named_as_declared(select, insert, self.analyzer.relations[name], pump)
        if terminal and self.several:
            if "stream" in {c.name.lower() for c in self.analyzer.relations[name].columns}:
                self.where.fail(f"'{name}' has a column named stream, the key that names each row's output stream",
                                pump_target(pump), "rename the column")
            select = select.copy()
            select.set("expressions", [exp.alias_(exp.Literal.string(name), "stream", quoted=True), *select.expressions])
            self.output(select, name)
        elif terminal:
            if any(q.name == "query" for q in self.analyzer.queries):
                self.where.fail("the application's output is filled by a pump, and the file has a final query as well",
                                pump.this, "read the pump's stream in the query, or drop the query")
            self.analyzer.queries.append(self.analyzer.query(select, "query"))
        else:
            del self.analyzer.relations[name]  # the declaration becomes the pump's view
            self.analyzer.view(name, select, pump)

    def output(self, select: exp.Expression, name: str, sink: str | None = None) -> None:
        """One of several outputs: a query named after its stream (or sink), which `run` runs."""
        self.analyzer.queries.append(self.analyzer.query(select, name, sink))
        self.analyzer.outputs.append(name)

    def named_as_declared(self, select: exp.Expression, insert: exp.Insert, stream: Relation, pump: exp.Create):
        """The pump's SELECT with each column named as the stream declares it, in order (of a
        UNION ALL, its first branch's: the first branch names the union's columns)."""
        if isinstance(select, exp.Union):
            select = select.copy()
            first = select
            while isinstance(first.this, exp.Union):
                first = first.this
            branch = first.this.unnest() if isinstance(first.this, exp.Subquery) else first.this
            first.set("this", self.named_as_declared(branch, insert, stream, pump))
            return select
        if not isinstance(select, exp.Select) or any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
                                                     for p in select.expressions):
            return select
        listed = insert.this.expressions if isinstance(insert.this, exp.Schema) else []
        columns = [ident_name(c) for c in listed] or [
            c.name for c in stream.columns if not (stream.implicit_rowtime and c.name == stream.rowtime)]
        at = [i for i, p in enumerate(select.expressions) if not _own_rowtime(p)]
        bare = [i for i, p in enumerate(select.expressions) if isinstance(p, exp.Column) and _own_rowtime(p)]
        if len(at) + len(bare) == len(columns) and bare:
            # KDA's own examples: SELECT STREAM "orderid", "ROWTIME" into ("orderid" int, "orderrowtime"
            # timestamp): the selected ROWTIME fills its declared column (the stream keeps its own rowtime)
            at = sorted(at + bare)
        if len(at) != len(columns):
            self.where.fail(f"pump '{relation_name(pump.this)}' inserts {len(at)} column{'s' * (len(at) != 1)} into "
                            f"'{stream.name}', which takes {len(columns)} ({', '.join(columns)})",
                            select, "select one expression per column of the stream, in its order")
        select = select.copy()
        expressions = list(select.expressions)
        for i, column in zip(at, columns, strict=True):
            body = expressions[i].this if isinstance(expressions[i], exp.Alias) else expressions[i]
            expressions[i] = exp.Alias(this=body, alias=exp.Identifier(this=column, quoted=True))
        select.set("expressions", expressions)
        return select

    def cycle(self, pending: list[exp.Expression], read: dict) -> None:
        """Fail at the first pump (or view) of a cycle among the statements left to run."""
        producers = {name: st for st in pending if (name := produces(st))}
        path: list[str] = []
        name = next(iter(producers))
        while name not in path:
            path.append(name)
            name = next(n for n, _ in read[id(producers[name])] if n in producers)
        cycle = [*path[path.index(name):], name]
        first = producers[cycle[0]]
        self.where.fail(f"the pumps form a cycle: {' -> '.join(cycle)} (each reads the stream after it)", first.this,
                        f"a {'pump' if is_pump(first) else 'view'} may not read, directly or not, the stream it fills")


def _in_order(select: exp.Expression, order: list[str]) -> exp.Expression:
    """A pump's SELECT, named as its stream's columns, with them in the stream's order (a UNION ALL
    pairs its branches' columns by position); its own ROWTIME last."""
    if not isinstance(select, exp.Select):
        return select
    def place(e: exp.Expression) -> int:
        return order.index(e.alias) if isinstance(e, exp.Alias) and e.alias in order else len(order)
    select.set("expressions", sorted(select.expressions, key=place))
    return select


def _query_of(pump: exp.Create) -> exp.Expression:
    query = pump.expression.expression
    return query.unnest() if isinstance(query, exp.Subquery) else query


def _own_rowtime(projection: exp.Expression) -> bool:
    """`ROWTIME` or `... AS ROWTIME`: the row's rowtime, which takes no declared column (an input's
    `o.ROWTIME` is a value like any other)."""
    if isinstance(projection, exp.Alias):
        return projection.alias.lower() == "rowtime"
    return isinstance(projection, exp.Column) and not projection.table and projection.name.lower() == "rowtime"
