"""The statements of a SQL file: declarations (CREATE STREAM / TABLE / SOURCE / SINK), views
(CREATE VIEW, Lenses' `WITH v AS (...);`), SET, and the one final query (or INSERT INTO).
A Kinesis Analytics / s-Server application declares in-application streams without a connector
and fills them with pumps (`CREATE PUMP p AS INSERT INTO s SELECT STREAM ...`): a pump whose
stream another pump (or query) reads is a view of that stream, its columns named as the stream
declares them; the pump whose stream nothing reads is the final query (docs/applications.md);
materialized views that nothing reads are the outputs of a file of views (analyzer.outputs)."""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from sqlglot import exp

import streamjoin.plan.analyzer.compound as compound
import streamjoin.plan.analyzer.dml as dml
import streamjoin.plan.analyzer.functions as functions
import streamjoin.plan.analyzer.semi_chains as semi_chains
import streamjoin.plan.analyzer.subqueries as subqueries
from streamjoin.dialect import directives, parse_script
from streamjoin.dialect.profiles import DEFAULT, Profile, fold
from streamjoin.errors import SqlError
from streamjoin.plan.analyzer.compound import distinct_as_groups, into_columns, passed_through, union_read, union_view
from streamjoin.plan.analyzer.foreign import as_declaration, options_of
from streamjoin.plan.analyzer.outputs import as_outputs
from streamjoin.plan.analyzer.pumps import Application, is_pump
from streamjoin.plan.analyzer.query import QueryAnalysis
from streamjoin.plan.analyzer.script_order import command_text, in_order
from streamjoin.plan.arithmetic import output_type
from streamjoin.plan.catalog import create_options, is_shared_cdc_source, relation_from_create
from streamjoin.plan.model import Column, Kind, Query, Relation, Script
from streamjoin.plan.scope import Located, ident_name, relation_name


def analyze(sql: str, filename: str = "<sql>", declared: tuple[tuple[str, str], ...] = (),
            profile: Profile = DEFAULT) -> Script:
    """Parse and analyse a SQL file; raises SqlError on the first rejected construct. (The plan
    `run` and `explain` use is `streamjoin.plan.compile`'s: this, then the rewrites.)
    `declared`: (where, CREATE statement) read before the file (plan.inputs: an app's config);
    `profile`: the dialect whose names and meanings the file has (`dialect.profiles`)."""
    analyzer = Analyzer(Located(sql, filename), profile)
    for where, text in declared:
        outside = Analyzer(Located(text, where), profile)
        for st in fold(parse_script(text, where, profile.slash_comments), profile):
            outside.create(st)
        for name, relation in outside.relations.items():
            if name in analyzer.relations:
                raise SqlError(f"'{name}' is declared twice in the app's config", where)
            analyzer.relations[name] = relation
            analyzer.declared_by[name] = where
    script = analyzer.script(fold(parse_script(sql, filename, profile.slash_comments), profile))
    read_as_blank = tuple(f"line {line}: {text[:40]}: a client's directive (sqlline, StreamLab), not SQL: ignored"
                          for line, text in directives(sql))
    return replace(script, dialect=profile.name, notes=read_as_blank + script.notes)


class Analyzer:
    def __init__(self, where: Located, profile: Profile = DEFAULT):
        self.where = where
        self.profile = profile
        self.relations: dict[str, Relation] = {}
        self.sinks: dict[str, Relation] = {}
        self.settings: list[tuple[str, str]] = []
        self.queries: list[Query] = []
        self.pumps: list = []  # model.Pump, in the order they run
        self.outputs: list[str] = []  # an application's output queries, when it has several
        self.declared_by: dict[str, str] = {}  # relations the app's config declares: where
        self.notes: list[str] = []  # statements dropped, replaced or ignored (script_order)
        self.servers: dict[str, dict[str, str]] = {}  # s-Server's CREATE SERVER, by name
        self.functions: dict = {}  # CREATE FUNCTION ... LANGUAGE SQL, by name (plan.analyzer.functions)
        self.filled_from: dict[str, str] = {}  # a table CREATE TABLE t AS reads (or t) -> t (plan.analyzer.dml)
        self.cdc_sources: dict[str, dict[str, str]] = {}  # RisingWave's shared CDC CREATE SOURCE, by name
        self.epoch = 0  # the INSERT / UPDATE / DELETE statements read so far (plan.analyzer.dml)
        self.subqueries = 0  # queries inside expressions made joins so far: their views' numbers (exists_1, ...)

    def script(self, statements: list[exp.Expression]) -> Script:
        statements, self.notes = in_order(statements, self.where)
        if any(is_pump(s) for s in statements):
            Application(self).analyze(statements)
        else:
            statements, self.outputs = as_outputs(statements, self.where)
            for statement in statements:
                self.statement(statement)
        return Script(relations=tuple(self.relations.values()), sinks=tuple(self.sinks.values()), settings=tuple(self.settings),
                      queries=tuple(self.queries), pumps=tuple(self.pumps), outputs=tuple(self.outputs), notes=tuple(self.notes))

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
                value = eq.expression if isinstance(eq, exp.EQ) else None
                if value is not None and value.find(exp.Query, exp.With):  # `SET a = <a statement>`: a lost `;` or value
                    self.where.fail(f"SET {key} needs a value before the next statement", value,
                                    "end the SET with its value and a `;`: SET name = value;")
                self.settings.append((key, value.sql() if value is not None else ""))
        elif isinstance(st, exp.Insert) and isinstance(st.expression, exp.Values) or isinstance(st, exp.Update | exp.Delete):
            self.seed_rows(st)
        elif isinstance(st, exp.Insert):
            target = st.this.this if isinstance(st.this, exp.Schema) else st.this
            if st.expression is None:
                self.where.fail("INSERT INTO needs a sink and a query: INSERT INTO sink SELECT STREAM ...", st,
                                "name the sink after INTO, then the query")
            self.final(st.expression, sink=relation_name(target))
        elif isinstance(st, exp.Query):
            self.final(st)
        else:
            what = " ".join(command_text(st).split()[:4]) if isinstance(st, exp.Command) else st.key.upper()
            self.where.fail(
                f"unsupported statement: {what}",
                st,
                "a file holds CREATE STREAM/TABLE/VIEW/SINK, WITH, SET, INSERT INTO and one query "
                "(docs/dialects/ lists what each dialect's scripts may hold)",
            )

    def create(self, st: exp.Create) -> None:
        kind = (st.text("kind") or "").upper()
        if kind == "SERVER":  # s-Server: the settings its foreign streams name (plan.analyzer.foreign)
            self.servers[relation_name(st.this)] = options_of(st)
            return
        if kind == "FUNCTION":  # a SQL function: inlined where it is called (plan.analyzer.functions)
            return functions.define(self, st)
        if kind.startswith("FOREIGN "):
            st, kind = as_declaration(st, self.servers), kind.removeprefix("FOREIGN ")
        if kind == "SINK" and st.expression is not None:
            self.sink_query(st)
        elif kind == "VIEW" and isinstance(st.this, exp.Schema):  # CREATE VIEW v ("a", "b") AS ...
            self.view(relation_name(st.this.this), self.renamed(st.expression, st.this, st), st)
        elif kind == "VIEW":
            self.view(relation_name(st.this), st.expression, st)
        elif kind == "STREAM" and st.expression is None and is_shared_cdc_source(st):
            name = relation_name(st.this)
            self.cdc_sources[name] = create_options(st)
            self.notes.append(f"line {self.where.position(st)[0]}: CREATE SOURCE {name}: a shared change-data-capture "
                              f"source: the tables declared FROM {name} TABLE '...' read its changes")
        elif kind in ("STREAM", "TABLE", "SINK") and st.expression is None:
            self.declare(st, kind)
        elif kind == "TABLE":  # RisingWave's CREATE TABLE t AS query: its rows (plan.analyzer.dml)
            dml.table_as(self, st)
        else:
            self.where.fail(f"unsupported statement: CREATE {kind}" + (" ... AS query" if st.expression else ""), st.this,
                            "use CREATE STREAM | TABLE | SOURCE | SINK name (...) WITH (...) or CREATE VIEW name AS query")

    def declare(self, st: exp.Create, kind: str) -> None:
        """CREATE STREAM | SOURCE | TABLE | SINK name (...) WITH (...): a relation of the program."""
        relation = relation_from_create(st, self.where, self.profile.arrival_rowtime, self.cdc_sources)
        if self.profile.name == "risingwave" and relation.kind == Kind.TABLE and kind == "TABLE" and not relation.options:
            # RisingWave: a table without a connector holds the rows the file inserts, none until it does
            relation = replace(relation, options=(("connector", "values"), ("rows", "[]")))
        target = self.sinks if kind == "SINK" else self.relations
        if relation.name in self.declared_by:
            self.where.fail(f"'{relation.name}' is declared by the app's config ({self.declared_by[relation.name]}) "
                            "and here", st.this, "declare it in one place: drop this statement or the config's section")
        if (relation.name in self.relations or relation.name in self.sinks) and st.args.get("exists"):
            self.notes.append(f"line {self.where.position(st)[0]}: CREATE ... IF NOT EXISTS {relation.name}: "
                              "declared before, so this one does nothing (as in RisingWave)")
            return
        if relation.name in self.relations or relation.name in self.sinks:
            self.where.fail(f"'{relation.name}' is declared twice", st.this, "give each stream, table and sink its own name")
        target[relation.name] = relation

    def seed_rows(self, st: exp.Insert | exp.Update | exp.Delete) -> None:
        """`INSERT INTO t VALUES`, `UPDATE`, `DELETE` on a table the file declares (plan.analyzer.dml)."""
        dml.seed_rows(self, st)

    def renamed(self, query: exp.Expression, columns: exp.Schema, node: exp.Expression) -> exp.Expression:
        """`CREATE VIEW v (a, b) AS SELECT 1, * FROM ...`: a `*` is expanded through a part view."""
        def expand(select: exp.Select) -> exp.Select:
            name = self.part_view(f"{relation_name(node.this.this)}_columns", select, node)
            planned = next(q for q in self.queries if q.name == name)
            return exp.select(*(exp.column(c.name, quoted=True) for c in planned.output)).from_(
                exp.Table(this=exp.to_identifier(name, quoted=True)))
        return renamed(query, columns, self.where, expand)

    def values_table(self, values: exp.Values, name: str) -> str:
        """`(VALUES (...), ...) AS t (a, b)` in FROM: a table of those rows (the seed rows'
        connector), its columns named by the alias's list, else column1, column2, ... (PostgreSQL)."""
        import json

        alias = values.args.get("alias")
        listed = [ident_name(c) for c in alias.args.get("columns") or []] if alias is not None else []
        rows = [row.expressions if isinstance(row, exp.Tuple) else [row] for row in values.expressions]
        width = len(rows[0]) if rows else 0
        for row, node in zip(rows, values.expressions, strict=True):
            if len(row) != width:
                self.where.fail(f"a VALUES row of {len(row)} values where the first has {width}", node,
                                "give every row the same number of values")
        names = listed or [f"column{n + 1}" for n in range(width)]
        if len(names) != width:
            self.where.fail(f"the VALUES alias names {len(names)} columns for rows of {width}", alias,
                            "name each column once: AS t (a, b)")
        data = [{c: dml.literal_value(v, self.where) for c, v in zip(names, row, strict=True)} for row in rows]
        columns = tuple(Column(c, _literal_type([r[c] for r in data])) for c in names)
        unique = self.free_name(name)
        options = {"connector": "values", "rows": json.dumps(data, default=str)}
        self.relations[unique] = Relation(name=unique, kind=Kind.TABLE, columns=columns,
                                          options=tuple(sorted(options.items())))
        return unique

    def sink_query(self, st: exp.Create) -> None:
        """RisingWave's `CREATE SINK s FROM mv | AS query WITH (...)`: the sink, and the query that
        writes it, one output of the file (`Script.outputs`); `CREATE SINK s INTO t AS query`
        writes the program's table t."""
        into = st.args.get("into")
        name = relation_name(st.this.this if isinstance(st.this, exp.Schema) else st.this)
        if into is not None:
            target = relation_name(into.this if isinstance(into, exp.Schema) else into)
            if target not in self.relations:
                self.where.fail(f"sink '{name}' writes into '{target}', which is not declared", into,
                                f"declare it: CREATE TABLE {target} (...)")
        else:
            sink = relation_from_create(st, self.where)
            if name in self.sinks or name in self.relations:
                self.where.fail(f"'{name}' is declared twice", st.this, "give each stream, table and sink its own name")
            self.sinks[name] = sink
            target = name
        view = passed_through(self, st.expression)  # `FROM mv`: the view's own query writes the sink (its joins run as the output's)
        query = replace(view, name=name, sink=target) if view is not None else self.query(st.expression, name, target)
        self.queries.append(into_columns(self, query, into) if into is not None else query)
        self.outputs.append(name)

    def view(self, name: str, query: exp.Expression, node: exp.Expression) -> None:
        if name in self.relations:
            self.where.fail(f"'{name}' is declared twice", node, "give each view its own name")
        query = query.unnest() if isinstance(query, exp.Subquery) else query
        plan = union_view(self, name, query) if isinstance(query, exp.Union) else self.query(query, name)
        self.queries.append(plan)
        def column_type(alias: str, name: str) -> str | None:  # of the view's inputs, for its columns' types
            relation = self.relations.get(next((i.relation for i in plan.inputs if i.alias == alias), ""))
            return next((c.type for c in relation.columns if c.name == name), None) if relation is not None else None

        columns = [Column(c.name, output_type(c.expression, column_type)) for c in plan.output]
        if plan.union_of:  # a UNION ALL's column has a type where every branch's has the same one
            branches = [[c.type for c in self.relations[b].columns] for b in plan.union_of]
            columns = [Column(c.name, c.type if len({t[n] for t in branches}) == 1 else "UNKNOWN") for n, c in enumerate(columns)]
        implicit = plan.kind == Kind.STREAM and "rowtime" not in [c.name for c in columns]
        if implicit:
            columns.append(Column("rowtime", "TIMESTAMP"))
        self.relations[name] = Relation(
            name=name,
            kind=plan.kind,
            columns=tuple(columns),
            rowtime="rowtime" if plan.kind == Kind.STREAM else None,
            view=True,
            implicit_rowtime=implicit,
            # a running aggregate's rows change: a table fed by its changes (Query.changelog_key)
            **({"options": (("changelog", "view"),), "primary_key": key} if (key := plan.changelog_key()) else {}),
        )

    def final(self, query: exp.Expression, sink: str | None = None) -> None:
        earlier = next((q for q in self.queries if q.name == "query"), None)
        if sink is not None and not self.pumps and (self.outputs or (earlier is not None and earlier.sink)):
            # several INSERT INTO statements (Lenses: a processor each; or beside CREATE SINK ... AS):
            # each writes its sink, an output of the file
            if earlier is not None:
                self.queries[self.queries.index(earlier)] = replace(earlier, name=earlier.sink)
                self.outputs.append(earlier.sink)
            if sink in self.outputs or any(q.name == sink for q in self.queries):
                self.where.fail(f"'{sink}' is written by two statements", query, "write each sink once")
            self.queries.append(self.query(query, sink, sink))
            self.outputs.append(sink)
            return
        if earlier is not None:
            self.where.fail("a file holds one final query; this is a second one", query, "turn the earlier one into a CREATE VIEW")
        if self.outputs and not self.pumps:
            self.where.fail("the file writes its sinks (CREATE SINK ... AS) and has a final query as well", query,
                            "write the query into a sink too, or make it a view")
        self.queries.append(self.query(query, "query", sink))

    def query(self, select: exp.Expression, name: str, sink: str | None = None) -> Query:
        select = functions.inline(self, select.unnest() if isinstance(select, exp.Subquery) else select)
        if isinstance(select, exp.Union):  # the query itself a UNION ALL: a view of it, read whole
            select = union_read(self, name, select)
        select = compound.with_rows_from(select, name)
        if not isinstance(select, exp.Select):
            self.where.fail(f"unsupported query form: {select.key.upper()}", select, "write a single SELECT")
        if select.args.get("laterals"):
            self.where.fail("LATERAL is not supported: it flattens a column of each row, it joins no other input",
                            select.args["laterals"][0], "select the array column itself")
        select = self.parts_as_views(distinct_as_groups(select))
        select = subqueries.as_joins(self, select)
        from_ = select.args.get("from_")
        if from_ is None:
            self.where.fail("a query needs a FROM clause", select, "SELECT STREAM ... FROM stream")
        named_windows = {ident_name(w.this): w for w in select.args.get("windows") or []}
        select = semi_chains.joins_as_view(self, select)  # (a semi / anti join after joins bounded in time)
        return replace(QueryAnalysis(self, select, named_windows).run(name, sink), epoch=self.epoch)

    def parts_as_views(self, select: exp.Select) -> exp.Select:
        """A query's common table expressions (WITH name AS (...)) and the subqueries in its FROM
        and JOINs, each as a view the plan already knows (named by the CTE or the subquery's
        alias), read by name: their streams, windows and bounds are those of any view."""
        with_ = select.args.get("with_")
        subqueries = [item for item in (select.args.get("from_"), *(select.args.get("joins") or []))
                      if item is not None and isinstance(item.this, exp.Subquery | exp.Values)]
        if with_ is None and not subqueries:
            return select
        select = select.copy()
        if with_ is not None:
            if with_.args.get("recursive"):
                self.where.fail("WITH RECURSIVE is not a streaming query", with_, "declare each part as a view")
            for cte in select.args["with_"].expressions:  # WITH c (a, b) AS (...): its columns named so
                self.part_view(ident_name(cte.args["alias"]), self.listed(cte.this, cte.args["alias"]), cte)
            select.set("with_", None)
        for n, item in enumerate(i for i in (select.args.get("from_"), *(select.args.get("joins") or []))
                                 if i is not None and isinstance(i.this, exp.Subquery | exp.Values)):
            sub = item.this
            if isinstance(sub, exp.Values):  # rows written in the query: a table of them
                alias = sub.args.get("alias")
                name = self.values_table(sub, ident_name(alias) if alias is not None else f"values_{n + 1}")
                item.set("this", exp.Table(this=exp.Identifier(this=name, quoted=True),
                                           alias=exp.TableAlias(this=(alias.this.copy() if alias is not None
                                                                      else exp.to_identifier(name, quoted=True)))))
                continue
            alias = sub.args.get("alias")
            name = ident_name(alias) if alias is not None else f"subquery_{n + 1}"
            name = self.part_view(name, self.listed(sub.this, alias), sub)
            if alias is not None and alias.args.get("columns"):  # (SELECT ...) AS t (a, b): the view has those names
                alias = alias.copy()
                alias.set("columns", None)
            table = exp.Table(this=exp.Identifier(this=name, quoted=True),
                              alias=alias.copy() if alias is not None else exp.TableAlias(this=exp.to_identifier(name, quoted=True)))
            for key in ("window", "within"):  # a window written after the subquery is the input's
                if sub.args.get(key) is not None:
                    table.set(key, sub.args[key])
            item.set("this", table)
        return select

    def listed(self, query: exp.Expression, alias: exp.TableAlias | None) -> exp.Expression:
        """A CTE's or subquery's query with its columns named as its alias lists them, if it does."""
        if alias is None or not alias.args.get("columns"):
            return query
        name = ident_name(alias)

        def expand(select: exp.Select) -> exp.Select:
            part = self.part_view(f"{name}_columns", select, alias)
            planned = next(q for q in self.queries if q.name == part)
            return exp.select(*(exp.column(c.name, quoted=True) for c in planned.output)).from_(
                exp.Table(this=exp.to_identifier(part, quoted=True)))
        names = [c.copy() for c in alias.args["columns"]]
        select = query.unnest() if isinstance(query, exp.Subquery) else query
        if isinstance(select, exp.Select) and len(names) < len(select.expressions):  # PostgreSQL: the first n renamed
            rest = [e.alias_or_name for e in select.expressions[len(names):]]
            if all(rest) and "*" not in rest:
                names += [exp.to_identifier(n) for n in rest]
        return renamed(query, exp.Schema(expressions=names), self.where, expand)

    def view_plan(self, name: str) -> Query:
        return next(q for q in reversed(self.queries) if q.name == name)

    def part_view(self, name: str, query: exp.Expression, node: exp.Expression) -> str:
        """A CTE's or subquery's view; its name, made unique when a declared name has it."""
        unique = self.free_name(name)
        self.view(unique, query, node)
        return unique

    def free_name(self, name: str) -> str:
        """`name`, or `name_2`, `name_3`, ... when a declared stream, table, view or sink has it."""
        unique, n = name, 1
        while unique in self.relations or unique in self.sinks:
            n += 1
            unique = f"{name}_{n}"
        return unique

    def topic(self, name: str, table: exp.Table) -> Relation | None:
        """A Lenses program's topic, named and not declared: a stream of its records (connector
        'kafka'), its columns read from them (plan.catalog.TOPICS), its rowtime the records'
        timestamps. None: not a Lenses program, or no reader of topics."""
        from streamjoin.plan.catalog import TOPICS

        reader = TOPICS.get()
        if self.profile.name != "lenses" or reader is None:
            return None
        try:
            columns = reader(name)
        except ValueError as error:
            self.where.fail(f"unknown stream or table '{name}', and no topic to read it from: {error}", table,
                            "declare it (CREATE STREAM name (...) WITH (connector = 'kafka', ...)), or point "
                            "STREAMJOIN_KAFKA_BOOTSTRAP at the broker that has it")
        # the records' `rowtime` field if they have one, else their timestamps (io.sources.kafka)
        fields = tuple(Column(c, t) for c, t in columns if c != "rowtime")
        if re.search(r"\b_meta\b", self.where.sql, re.IGNORECASE):  # Lenses' _meta facet, where the program reads it
            fields += (Column("_meta", "STRUCT<offset BIGINT, partition INT, timestamp BIGINT>"),)
        relation = Relation(name=name, kind=Kind.STREAM, columns=(*fields, Column("rowtime", "TIMESTAMP")), rowtime="rowtime",
                            options=(("connector", "kafka"), ("topic", name)), implicit_rowtime=True)
        self.relations[name] = relation
        return relation

    def relation(self, table: exp.Table) -> Relation:
        name = relation_name(table)
        candidates = [name, name.split(".")[-1]]
        for candidate in candidates:
            if candidate in self.relations:
                return self.relations[candidate]
        by_last_part = [r for n, r in self.relations.items() if n.split(".")[-1] == name]
        if len(by_last_part) == 1:  # `order_quantity` for a declared `stocks.order_quantity`
            return by_last_part[0]
        topic = self.topic(name, table)
        if topic is not None:
            return topic
        known = sorted(self.relations)
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else (
            (f"declared: {', '.join(known)}; " if known else "") + "declare it with CREATE STREAM | TABLE name (...) "
            "WITH (...), or in the app's config ([inputs.NAME] / [reference.NAME], --config)"
        )
        self.where.fail(f"unknown stream or table '{name}'", table, hint)


def renamed(query: exp.Expression, columns: exp.Schema, where: Located,
            expand=None) -> exp.Expression:
    """A view's query with its output columns named as `CREATE VIEW v (a, b)` lists them, in order.
    `expand(select)`: for a query that selects `*`, the query over a part view of it selecting
    each of its columns (the caller's, which plans the part)."""
    select = query.unnest() if isinstance(query, exp.Subquery) else query
    names = [ident_name(c) for c in columns.expressions]
    starred = any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star) for e in select.expressions) \
        if isinstance(select, exp.Select) else False
    if starred and expand is not None:
        select = expand(select)
    elif not isinstance(select, exp.Select) or starred:
        where.fail("a view's column list names its query's columns one by one", columns,
                   "list the query's columns instead of *, or drop the view's column list")
    if len(names) != len(select.expressions):
        where.fail(f"the view lists {len(names)} columns, its query selects {len(select.expressions)}", columns,
                   "name each selected column once")
    select = select.copy()
    select.set("expressions", [exp.alias_(e.this if isinstance(e, exp.Alias) else e, n, quoted=True)
                               for e, n in zip(select.expressions, names, strict=True)])
    return select


def _literal_type(values: list) -> str:
    """The SQL type of a VALUES column from its literals (NULLs alone: VARCHAR)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "BOOLEAN"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "BIGINT"
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return "DOUBLE"
    return "VARCHAR"
