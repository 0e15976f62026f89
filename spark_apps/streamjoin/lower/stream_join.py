"""Lowering a stream-stream join plan onto Spark's native stream-stream join.

Each stream input is a staged file stream (`streamjoin.io`) with a watermark on its rowtime
(delay = the input's allowed lateness, so Spark's watermark is the stream clock of §1). Each
join of the left-deep chain is one `DataFrame.join` whose condition is the plan's keys, residual
and the co-presence time bounds of §4, which is also what lets Spark drop state as the clock
advances. The output rowtime (§4) is the latest presence start among the non-null input rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import sqlglot
from sqlglot import exp

from streamjoin.dialect import StreamJoin
from streamjoin.errors import Unsupported
from streamjoin.io.s3 import S3Settings, is_s3
from streamjoin.io.staging import BOUND, InputSpec
from streamjoin.io.types import arrow_schema
from streamjoin.lower.tables import expand
from streamjoin.plan import model as m
from streamjoin.plan import operators
from streamjoin.plan.windows import BucketWindow, RangeWindow

ROWTIME_COLUMN = "__rowtime"
# Spark's event time: the rowtime plus instants.SHIFT_US (Spark's watermark cannot go below the
# epoch). Each stream input carries it as `alias____et`, the column its watermark is on; time
# bounds between inputs compare it (the same differences as the rowtimes), so that Spark drops
# state by them. Rowtime columns themselves stay as the user's data says.
ET_COLUMN = "__et"
ZERO = "__zero"  # a per-input key column that is 0 for every row (not foldable: it reads the rowtime)
_SPARK_JOIN = {"INNER": "inner", "CROSS": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full"}
_SUPPORTED_KINDS = (m.STREAM_STREAM_WINDOW, m.INTERVAL)


@dataclass
class Lowered:
    frame: object  # the streaming DataFrame of output columns plus __rowtime
    inputs: list[InputSpec]
    columns: list[str]  # output column names, in order
    order_delay_ms: int  # how far behind the watermark output is final (outer joins)
    snapshots: list = field(default_factory=list)  # streamjoin.lower.tables.Snapshot, one per table input
    bucketed: object = None  # streamjoin.lower.bucketed.BucketedJoin when the last join preserves a table
    sink: object = None  # streamjoin.io.table_sink.SinkSpec for INSERT INTO an S3 sink; None: JSON Lines
    custom: bool = False  # the frame comes from streamjoin's operator (meta rows, holds; streamjoin.operator)
    emit: str = "FINAL"
    # a chain cut after outer joins (operators.cuts): the queries before this one, in order; each
    # writes its rows, in rowtime order and with rowtime bounds, to `stage_output` as parquet
    upstream: list = field(default_factory=list)
    stage_output: str | None = None
    stage_spec: InputSpec | None = None  # how the next part reads `stage_output`


_TABLE_JOINS = (m.SNAPSHOT, m.TEMPORAL, m.TABLE_TABLE, m.ASOF_TABLE)


def check_runnable(script: m.Script, query: m.Query) -> None:
    """Raise Unsupported for what this runtime does not run yet, naming it."""
    if query.kind != m.STREAM:
        raise Unsupported("`run` runs streaming queries (SELECT STREAM over streams)")
    query = _changelog(script, query)
    _check_query(script, query, top=True)
    sink_spec(script, query)


def sink_spec(script: m.Script, query: m.Query):
    """The INSERT INTO target as a SinkSpec (None without INSERT INTO), or Unsupported."""
    from streamjoin.io.table_sink import HOUR, SinkSpec

    if not query.sink:
        return None
    sinks = {r.name: r for r in script.sinks}
    relation = sinks.get(query.sink)
    if relation is None:
        return None  # an undeclared target (Lenses' topics): rows go to `run`'s --output
    try:
        spec = SinkSpec.from_options(relation.name, dict(relation.options), expand)
    except ValueError as error:
        raise Unsupported(str(error)) from None
    if spec.partitioned_by == HOUR and any(o.name == HOUR for o in query.output):
        raise Unsupported(f"sink '{relation.name}' is partitioned by '{HOUR}', which is also an output column: rename the column")
    if spec.partitioned_by == HOUR:
        units = {query.aggregation.bucket_unit if query.aggregation else None}
        units |= {i.window.unit for i in query.inputs if isinstance(i.window, BucketWindow)}
        coarse = sorted(u for u in units if u and u.upper() in ("DAY", "WEEK", "MONTH", "YEAR"))
        if coarse:  # a day's rows carry the day's start but come when it closes: hour 00 cannot be marked at 01:00
            raise Unsupported(f"sink '{relation.name}' marks hours complete, but the query's {coarse[0]} buckets close "
                              "later than their hours: partition such a sink by nothing (leave out partitioned_by)")
    return spec


def _check_query(script: m.Script, query: m.Query, top: bool) -> None:
    relations = {r.name: r for r in script.relations}
    views = {q.name: q for q in script.queries}
    if operators.uses_custom(query):
        from streamjoin.lower import custom_join

        if not top:
            raise Unsupported("a view whose join needs streamjoin's own operator is not supported by `run` yet")
        custom_join.check(script, query)
        for i in query.inputs:
            relation = relations[i.relation]
            connector = (relation.option("connector") or "files").lower()
            if connector not in _STREAM_CONNECTORS:
                raise Unsupported(f"input '{i.alias}': connector '{connector}' is not supported for streams yet (use 'files' or 's3')")
            if not relation.option("path"):
                raise Unsupported(f"stream '{relation.name}' needs WITH (path = '...') to be read")
        if sink_spec(script, query) is not None:
            raise Unsupported("a join on streamjoin's own operator writes to --output (JSON Lines) in `run` yet, not to an S3 sink")
        return
    for o in query.output:
        if sqlglot.parse_one(o.expression, read=StreamJoin).find(exp.Window):
            raise Unsupported(f"output column '{o.name}': an aggregate OVER a window of rows (an analytic window function) is "
                              "not supported by `run`; it runs joins, and GROUP BY over time buckets")
    if query.emit != "FINAL" and (not top or query.aggregation is not None or any(j.kind == m.BUCKETED for j in query.joins)):
        raise Unsupported(f"EMIT {query.emit} of an aggregation, a bucketed join or a view is not supported by `run` yet; EMIT FINAL is")
    streams = [i for i in query.inputs if i.kind == m.STREAM]
    for i in query.inputs:
        relation = relations[i.relation]
        if i.time_window is not None and query.aggregation is None:
            raise Unsupported(f"input '{i.alias}': {i.time_window.function} window joins are not supported by `run` yet")
        if relation.view:
            view = views[relation.name]
            if view.kind == m.TABLE:
                _check_table_view(script, view)
            else:
                _check_query(script, view, top=False)
                if view.aggregation is not None and any(
                    j.kind not in (*_TABLE_JOINS, m.BUCKETED) for j in query.joins
                ):
                    raise Unsupported(
                        f"input '{i.alias}' is an aggregating view: it can feed stream-table joins, not stream-stream joins, in `run` yet"
                    )
            continue
        if i.kind == m.TABLE:
            _check_table(relation)
            continue
        connector = (relation.option("connector") or "files").lower()
        if connector not in _STREAM_CONNECTORS:
            raise Unsupported(
                f"input '{i.alias}': connector '{relation.option('connector')}' is not supported for streams yet (use 'files' or 's3')"
            )
        if not relation.option("path"):
            raise Unsupported(f"stream '{relation.name}' needs WITH (path = '...') to be read")
        if "${" not in relation.option("path"):  # else checked once expanded (input_specs)
            _check_stream_path(relation, connector, relation.option("path"))
        stream_joined = any(i.alias in (j.right, *j.left_inputs) for j in query.joins if j.kind not in _TABLE_JOINS and j.kind != m.BUCKETED)
        if stream_joined and not isinstance(i.window, RangeWindow):
            raise Unsupported(f"input '{i.alias}': {type(i.window).__name__} windows are not supported by `run` yet (RANGE windows are)")
    for j in query.joins:
        if j.kind not in (*_SUPPORTED_KINDS, *_TABLE_JOINS, m.BUCKETED):
            raise Unsupported(f"{j.kind}s are not supported by `run` yet")
        if j.kind == m.BUCKETED:
            if j is not query.joins[-1] or not top or query.aggregation is not None:
                raise Unsupported("a bucketed table-preserving join must be the last join of the final query in `run`")
            if query.input(j.right).kind != m.TABLE or j.join_type != "RIGHT":
                raise Unsupported("a bucketed table-preserving join runs as `stream OVER (bucket) RIGHT JOIN table` in `run`")
            if not isinstance(query.input(j.left_inputs[-1]).window, BucketWindow):
                raise Unsupported("the stream of a bucketed table-preserving join must be its last input before the table")
    if operators.cuts(query):
        _check_stages(script, query, top)
    if query.aggregation is not None:
        agg = query.aggregation
        if agg.bucket is None:
            raise Unsupported(
                "GROUP BY without a time bucket never closes a group under EMIT FINAL: "
                "group by FLOOR(ROWTIME TO unit) or TUMBLE(...)'s window_start"
            )
        if (agg.bucket_unit or "").upper() in ("MONTH", "YEAR"):
            raise Unsupported(f"GROUP BY FLOOR(ROWTIME TO {agg.bucket_unit}) is not supported by `run` yet (SECOND to DAY are)")
        if len(streams) != 1 or any(j.kind not in _TABLE_JOINS for j in query.joins):
            raise Unsupported("`run` aggregates one stream (joined with tables only); aggregate joined streams in a later issue")
        stream = streams[0]
        if relations[stream.relation].view and views[stream.relation].aggregation is not None:
            raise Unsupported("an aggregation over an aggregating view is not supported by `run` yet")
        if stream.window is not None and getattr(stream.window, "lag_ms", 0):
            raise Unsupported("an aggregation over a lagged window is not supported by `run` yet")
        from streamjoin.lower.aggregate import check_distinct

        check_distinct(query)


_STREAM_CONNECTORS = ("files", "s3")


def _check_stages(script: m.Script, query: m.Query, top: bool) -> None:
    first = query.joins[operators.cuts(query)[0]]
    where = f"a {first.join_type} JOIN followed by another join"
    if not top:
        raise Unsupported(f"{where} inside a view is not supported by `run` yet; put the chain in the final query")
    if any(j.kind == m.BUCKETED for j in query.joins):
        raise Unsupported(f"{where} and a bucketed table-preserving join in one query are not supported by `run` yet")
    if sink_spec(script, query) is not None:
        raise Unsupported(f"{where} writes to --output (JSON Lines) in `run` yet, not to an S3 sink")
    streams = [i.alias for i in query.inputs if i.kind == m.STREAM]
    for n in operators.cuts(query):
        before = [a for a in streams if a in (*query.joins[n].left_inputs, query.joins[n].right)]
        for j in query.joins[n + 1:]:
            if j.right in streams and _start_bounds(j, before, query) is None:
                raise Unsupported(
                    f"{where}: the later join with '{j.right}' needs a time bound (windows or a time range) "
                    f"between '{j.right}' and each of {', '.join(repr(a) for a in before)}"
                )


def _start_bounds(join: m.Join, before: list[str], query: m.Query) -> tuple[int, int] | None:
    """(L, H) with `L <= right.rowtime - start <= H` for every match of `join`, where `start` is
    the output rowtime (latest presence start) of a row of the inputs `before`: what lets
    Spark drop state between an intermediate stream and `join.right`. None if an input of
    `before` has no two-sided time bound with the right input."""
    lows, highs = [], []
    for alias in before:
        mine = [b for b in join.condition.time_bounds if b.left == alias and b.right == join.right]
        low = max((b.low_ms for b in mine if b.low_ms is not None), default=None)
        high = min((b.high_ms for b in mine if b.high_ms is not None), default=None)
        if low is None or high is None:
            return None
        lag = _lag(query.input(alias))
        lows.append(low - lag)
        highs.append(high - lag)
    return min(lows), max(highs)


def _check_stream_path(relation: m.Relation, connector: str, path: str) -> None:
    """connector 'files' reads a local folder, connector 's3' an s3:// prefix (a landing zone)."""
    if connector == "s3" and not is_s3(path):
        raise Unsupported(f"stream '{relation.name}': connector 's3' needs path = 's3://bucket/prefix/', not '{path}'")
    if connector == "files" and is_s3(path):
        raise Unsupported(f"stream '{relation.name}': path '{path}' is in S3: use connector = 's3'")


def _check_table(relation: m.Relation) -> None:
    connector = (relation.option("connector") or "files").lower()
    if connector in ("files", "s3") and not relation.option("path"):
        raise Unsupported(f"table '{relation.name}' needs WITH (path = '...') to be read")
    if connector == "postgres" and not (relation.option("url") and (relation.option("table") or relation.option("query"))):
        raise Unsupported(f"table '{relation.name}': connector 'postgres' needs url and table (or query)")
    if connector not in ("files", "postgres", "s3"):
        raise Unsupported(f"table '{relation.name}': connector '{connector}' is not supported (use 'files', 'postgres' or 's3')")


def _check_table_view(script: m.Script, view: m.Query) -> None:
    relations = {r.name: r for r in script.relations}
    if view.joins or view.aggregation is not None or len(view.inputs) != 1:
        raise Unsupported(f"table view '{view.name}': `run` takes table views over one stream or table, without joins or GROUP BY")
    relation = relations[view.inputs[0].relation]
    if relation.view or relation.option("connector", "files") != "files" or not relation.option("path"):
        raise Unsupported(f"table view '{view.name}': its source must be a declared files stream or table with a path")


def input_specs(script: m.Script, query: m.Query, checkpoint: Path, late_root: Path, prefix: str = "") -> list[InputSpec]:
    """The stream inputs to stage: the query's own and, under `view.alias`, its views' inputs."""
    relations = {r.name: r for r in script.relations}
    views = {q.name: q for q in script.queries}
    if not prefix:
        query = _changelog(script, query)
    specs = []
    for i in query.inputs:
        r = relations[i.relation]
        if r.view:
            if views[r.name].kind == m.STREAM:
                specs += input_specs(script, views[r.name], checkpoint, late_root, f"{prefix}{r.name}.")
            continue
        if i.kind != m.STREAM:
            continue
        key = prefix + i.alias
        path = expand(r.option("path"))
        _check_stream_path(r, (r.option("connector") or "files").lower(), path)
        specs.append(
            InputSpec(
                alias=key,
                path=path,
                format=(r.option("format") or "json").lower(),
                schema=arrow_schema(r.columns),
                rowtime=r.rowtime,
                lateness_ms=r.lateness_ms,
                state_dir=str(checkpoint / "sources" / key),
                late_dir=str(late_root / key),
                # read when the query is planned: the stager uses these (docs/storage.md)
                storage=asdict(S3Settings.from_env()) if is_s3(path) else None,
            )
        )
    return specs


def lower(spark, script: m.Script, query: m.Query, specs: list[InputSpec], checkpoint: Path | None = None) -> Lowered:
    check_runnable(script, query)
    query = _changelog(script, query)
    if checkpoint is None:
        checkpoint = Path(specs[0].state_dir).parent.parent
    columns = [c.name for c in query.output]
    if operators.uses_custom(query):
        from streamjoin.lower.custom_join import OP, lower_custom

        frame = lower_custom(spark, script, query, {s.alias: s for s in specs}, flat, spark_sql)
        if query.emit == "CHANGES":
            columns.insert(0, OP)
        return Lowered(frame, specs, columns, 0, sink=sink_spec(script, query), custom=True, emit=query.emit)
    lowering = _Lowering(spark, script, {s.alias: s for s in specs}, checkpoint)
    if operators.cuts(query):
        return lowering.stages(query, specs)
    frame, bucketed = lowering.query_frame(query, "", top=True)
    frame = frame.drop(ET_COLUMN)
    if query.emit == "CHANGES":  # stream-table joins decide each row at once: a changelog of inserts
        from pyspark.sql import functions as F

        from streamjoin.lower.custom_join import OP

        frame = frame.select(F.lit("+I").alias(OP), "*")
        columns.insert(0, OP)
    return Lowered(frame, specs, columns, order_delay(query), lowering.snapshots, bucketed, sink_spec(script, query))


def _changelog(script: m.Script, query: m.Query) -> m.Query:
    """A stream joined with a `SELECT TABLE` view over a stream runs as a changelog join."""
    return operators.changelog_query(script, query)


class _Lowering:
    def __init__(self, spark, script: m.Script, specs: dict[str, InputSpec], checkpoint: Path):
        self.spark, self.script, self.specs, self.checkpoint = spark, script, specs, checkpoint
        self.relations = {r.name: r for r in script.relations}
        self.views = {q.name: q for q in script.queries}
        self.snapshots = []

    def query_frame(self, query: m.Query, prefix: str, top: bool = False):
        """(streaming frame of output columns + __rowtime, BucketedJoin or None)."""
        frames = {i.alias: self.input_frame(query, i, prefix) for i in query.inputs}
        joined, bucketed_join = self.join_chain(query, frames, frames[query.inputs[0].alias], query.joins)
        return self.finish(query, frames, joined, bucketed_join)

    def join_chain(self, query: m.Query, frames: dict, joined, joins, before: tuple[str, ...] = ()):
        """Join `joins` onto `joined`; `before`: the stream inputs an intermediate stream (the
        output of an earlier query of a cut chain) brings, NULL for its NULL-extended rows."""
        from pyspark.sql import functions as F

        streams = [i.alias for i in query.inputs if i.kind == m.STREAM]
        for join in joins:
            if join.kind == m.BUCKETED:
                return joined, join
            sides = [*join.left_inputs, join.right]
            stream_sides = [a for a in sides if a in streams]
            keys = [e for pair in join.condition.keys for e in pair]
            guard = _not_bound(stream_sides, [_rowtime_of(query, a) for a in stream_sides], [spark_sql(k) for k in keys])
            condition = " AND ".join(p for p in (join_condition(join, query, stream_sides, before), guard) if p)
            if join.kind == m.ASOF_TABLE:
                from streamjoin.lower.asof_table import asof_lookup

                joined = asof_lookup(joined, frames[join.right], query, join)
                continue
            joined = joined.join(frames[join.right], F.expr(condition), _SPARK_JOIN[join.join_type])
            if join.kind not in _TABLE_JOINS and join is not joins[-1]:
                joined = _one_event_time(joined, query, [a for a in sides if a in streams])
        return joined, None

    def stages(self, query: m.Query, specs: list[InputSpec]) -> Lowered:
        """A chain cut after its outer joins (operators.cuts) as one Spark query per part: each part
        but the last writes its rows (all input columns, flat, and the rowtime of §4) in rowtime
        order to a folder that the next part reads as a stream, through the same staging as any
        input (its bounds are the clock of the part that writes it)."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import to_arrow_schema

        frames = {i.alias: self.input_frame(query, i, "") for i in query.inputs}
        streams = [i.alias for i in query.inputs if i.kind == m.STREAM]
        late_root = Path(specs[0].late_dir).parent
        upstream, start, before, joined = [], 0, (), frames[query.inputs[0].alias]
        delay = order_delay(query)  # every part: how far behind its watermark its rows are final
        for cut in operators.cuts(query):
            joins = query.joins[start:cut + 1]
            joined, _ = self.join_chain(query, frames, joined, joins, before)
            aliases = [a for a in streams if a in (*joins[-1].left_inputs, joins[-1].right)]
            rows = joined.where(F.expr(_not_bound(aliases, [_rowtime_of(query, a) for a in aliases])))
            rows = rows.withColumn(ROWTIME_COLUMN, F.expr(output_rowtime(query, aliases)))
            internal = {bound_column(a) for a in aliases} | {flat(a, ZERO) for a in aliases} | {et(a) for a in aliases} | {START}
            rows = rows.select(*[c for c in rows.columns if c not in internal])
            part = len(upstream)
            folder = self.checkpoint / "stages" / str(part)
            mine = [s for s in specs if _belongs(s.alias, query, joins, start == 0)] + [u.stage_spec for u in upstream[-1:]]
            spec = InputSpec(
                alias=f"__part{part}",
                path=str(folder / "rows"),
                format="parquet",
                schema=to_arrow_schema(rows.schema, timezone="UTC"),
                rowtime=ROWTIME_COLUMN,
                lateness_ms=0,  # written in rowtime order, below the bounds it writes
                state_dir=str(self.checkpoint / "sources" / f"__part{part}"),
                late_dir=str(late_root / f"__part{part}"),
            )
            upstream.append(Lowered(rows, mine, list(rows.columns), delay, stage_output=spec.path, stage_spec=spec))
            before, start = tuple(aliases), cut + 1
            joined = _intermediate_frame(self.spark, spec, before)
        joins = query.joins[start:]
        joined, _ = self.join_chain(query, frames, joined, joins, before)
        frame, _ = self.finish(query, frames, joined, None)
        frame = frame.drop(ET_COLUMN)
        mine = [s for s in specs if _belongs(s.alias, query, joins, False)] + [upstream[-1].stage_spec]
        return Lowered(frame, mine, [c.name for c in query.output], delay, self.snapshots, upstream=upstream)

    def finish(self, query: m.Query, frames: dict, joined, bucketed_join):
        from pyspark.sql import functions as F

        streams = [i.alias for i in query.inputs if i.kind == m.STREAM]
        if query.where and bucketed_join is None:
            joined = joined.where(F.expr(_or_bound(spark_sql(query.where), streams)))
        if not _inner_only(query):  # an inner join's own guard keeps bound rows out
            joined = joined.where(F.expr(_not_bound(streams, [_rowtime_of(query, a) for a in streams])))
        if bucketed_join is not None:
            from streamjoin.lower.bucketed import BucketedJoin

            left = [a for a in streams if a in bucketed_join.left_inputs]
            joined = joined.withColumn(ROWTIME_COLUMN, _rowtime_column(query, left))
            internal = {bound_column(a) for a in streams} | {flat(a, ZERO) for a in streams} | {et(a) for a in streams}
            carried = [c for c in joined.columns if c not in internal]
            bucket = query.input(bucketed_join.left_inputs[-1]).window
            from pyspark.sql.pandas.types import to_arrow_schema

            frame = joined.select(*carried)
            join = BucketedJoin(self.spark, query, bucketed_join, frames[bucketed_join.right], carried, bucket.unit)
            join.empty = to_arrow_schema(frame.schema, timezone="UTC").empty_table()
            return frame, join
        if query.aggregation is not None:
            from streamjoin.lower.aggregate import aggregate

            return aggregate(joined, query, et(streams[0])), None
        joined = joined.withColumn(ROWTIME_COLUMN, _rowtime_column(query, streams))
        selected = [F.expr(spark_sql(c.expression)).alias(c.name) for c in query.output]
        return joined.select(*selected, F.col(ROWTIME_COLUMN), _event_time(query, streams).alias(ET_COLUMN)), None

    def input_frame(self, query: m.Query, item: m.Input, prefix: str):
        from pyspark.sql import functions as F

        from streamjoin.lower import tables

        relation = self.relations[item.relation]
        if relation.view and self.views[relation.name].kind == m.STREAM:
            view = self.views[relation.name]
            frame, _ = self.query_frame(view, f"{prefix}{relation.name}.")
            out = [c.name for c in view.output]
            rowtime = relation.rowtime
            cols = [F.col(c).alias(flat(item.alias, c)) for c in out]
            if rowtime not in out:
                cols.append(F.col(ROWTIME_COLUMN).alias(flat(item.alias, rowtime)))
            return frame.select(
                *cols,
                F.col(ET_COLUMN).alias(et(item.alias)),
                F.lit(False).alias(bound_column(item.alias)),
                (F.unix_micros(F.col(ROWTIME_COLUMN)) * 0).alias(flat(item.alias, ZERO)),
            )
        if item.kind == m.STREAM:
            return _input_frame(self.spark, self.specs[prefix + item.alias], item.alias)
        if item.temporal:
            join = next(j for j in query.joins if j.right == item.alias)
            tables.check_temporal_key(relation, join)
            return tables.temporal_frame(self.spark, relation, item.alias)
        view_rows = self.table_view_rows(relation) if relation.view else None
        frame, snapshot = tables.load_snapshot(
            self.spark, relation, item.alias, query, item, self.checkpoint / "snapshots", view_rows
        )
        self.snapshots.append(snapshot)
        return frame

    def table_view_rows(self, relation: m.Relation):
        """A `SELECT TABLE` view over a stream (Lenses): the stream's rows as they are now; with a
        `_key` column, the latest row per key (a compacted topic)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        from streamjoin.lower import tables

        view = self.views[relation.name]
        item = view.inputs[0]
        source = self.relations[item.relation]
        schema = arrow_schema(source.columns)
        fmt = (source.option("format") or ("json" if source.kind == m.STREAM else "csv")).lower()
        rows = tables.read_files(tables.expand(source.option("path")), fmt, schema)
        frame = self.spark.createDataFrame(rows.rename_columns([flat(item.alias, c) for c in rows.column_names]))
        if source.kind == m.STREAM:
            frame = frame.withColumn(ROWTIME_COLUMN, F.col(flat(item.alias, source.rowtime)))
        if view.where:
            frame = frame.where(F.expr(spark_sql(view.where)))
        order = [F.col(ROWTIME_COLUMN).desc()] if source.kind == m.STREAM else []
        frame = frame.select(*[F.expr(spark_sql(c.expression)).alias(c.name) for c in view.output], *(
            [F.col(ROWTIME_COLUMN)] if order else []))
        if "_key" in frame.columns and order:
            latest = Window.partitionBy("_key").orderBy(*order)
            frame = frame.withColumn("__n", F.row_number().over(latest)).where("__n = 1").drop("__n")
        return frame.drop(ROWTIME_COLUMN).toArrow()


START = "__start"  # an intermediate stream's rowtime: the output rowtime of the part that wrote it


def _belongs(key: str, query: m.Query, joins, first: bool) -> bool:
    """Whether the staged input `key` (an alias, or `view.alias` for a view's input) is read by
    the part of a cut chain made of `joins` (and, for the first part, the first input)."""
    aliases = [j.right for j in joins] + ([query.inputs[0].alias] if first else [])
    for alias in aliases:
        relation = query.input(alias).relation
        if key == alias or key.startswith(f"{relation}."):
            return True
    return False


def _intermediate_frame(spark, spec: InputSpec, aliases: tuple[str, ...]):
    """The rows an earlier part of a cut chain wrote, as the joined frame they were: flat
    columns, plus each input's bound flag and zero column (the part's own rowtime is START,
    the event time: the inputs' rowtimes are plain timestamps here)."""
    from pyspark.sql import functions as F

    from streamjoin.io.source import staged_stream

    df = staged_stream(spark, spec)
    df = df.withColumn(START, engine_time(F.col(ROWTIME_COLUMN))).withWatermark(START, f"{spec.lateness_ms} milliseconds")
    carried = [F.col(c) for c in df.columns if c not in (BOUND, ROWTIME_COLUMN, START)]
    return df.select(
        *carried,
        F.col(START),
        *[F.col(BOUND).alias(bound_column(a)) for a in aliases],
        *[(F.unix_micros(F.col(ROWTIME_COLUMN)) * 0).alias(flat(a, ZERO)) for a in aliases],
    )


def _one_event_time(joined, query: m.Query, aliases: list[str]):
    """Spark allows one event-time column per stream: a joined frame that feeds another join
    keeps the first input's as its event time; the others become plain timestamps."""
    from pyspark.sql import functions as F

    for alias in aliases[1:]:
        if et(alias) in joined.columns:  # an intermediate input's is START (see `stages`)
            joined = joined.withColumn(et(alias), F.timestamp_micros(F.unix_micros(F.col(et(alias)))))
    return joined


def _input_frame(spark, spec: InputSpec, alias: str):
    from pyspark.sql import functions as F

    from streamjoin.io.source import staged_stream

    df = staged_stream(spark, spec).withColumn(ET_COLUMN, engine_time(F.col(spec.rowtime)))
    # Bound rows must reach the watermark operator, and Spark pushes any filter on them below
    # it. So they go through: no join condition accepts them, and they leave after the joins.
    df = df.withWatermark(ET_COLUMN, f"{spec.lateness_ms} milliseconds")
    # flat, unique names (alias__column): joined frames can then be re-projected freely
    names = {c: flat(alias, c) for c in df.columns if c != BOUND}
    return df.select(
        *[F.col(c).alias(n) for c, n in names.items()],
        F.col(BOUND).alias(bound_column(alias)),
        (F.unix_micros(F.col(spec.rowtime)) * 0).alias(flat(alias, ZERO)),
    )


def flat(alias: str, column: str) -> str:
    return f"{alias}__{column}"


def et(alias: str) -> str:
    """The engine-time column of a stream input (see ET_COLUMN)."""
    return flat(alias, ET_COLUMN)


def engine_time(rowtime):
    """A rowtime column as Spark's event time (instants.SHIFT_US later)."""
    from pyspark.sql import functions as F

    from streamjoin.io.instants import SHIFT_US

    return F.timestamp_micros(F.unix_micros(rowtime) + F.lit(SHIFT_US))


def bound_column(alias: str) -> str:
    return f"__bound_{alias}"


def _any_bound(aliases) -> str:
    return " OR ".join(f"coalesce({_q(bound_column(a))}, false)" for a in aliases)


def _not_bound(aliases, rowtimes, keys=()) -> str:
    """No bound row among the aliases, and no NULL join key. Spark splits boolean filters and
    pushes the parts that name one input (and not its rowtime) below the watermark, where they
    would stop bound rows from moving it; a sum over every alias, naming the rowtimes, stays
    where it is. (Spark's own IS NOT NULL filters on join keys are off for the same reason, and
    its streaming join would otherwise match NULL keys.)"""
    flags = [f"cast(coalesce({_q(bound_column(a))}, false) AS INT)" for a in aliases]
    flags += [f"cast(({k}) IS NULL AS INT)" for k in keys]
    anchors = [f"coalesce(0 * unix_micros({rt}), 0)" for rt in rowtimes]
    if not flags + anchors:
        return "true"
    return f"({' + '.join(flags + anchors)}) = 0"


def _inner_only(query: m.Query) -> bool:
    """Every join inner (and on Spark's join), so no output row holds a bound row: each join's
    condition has the `_not_bound` guard, and only an outer join emits a row it did not match.
    (Spark would move a filter after them into the last join's condition, checked per pair.)"""
    return all(j.join_type in ("INNER", "CROSS") and j.kind not in (m.ASOF_TABLE, m.BUCKETED) for j in query.joins)


def _or_bound(predicate: str, aliases) -> str:
    """A filter that lets bound rows through, wherever Spark pushes it."""
    if not aliases:
        return predicate
    return f"(({predicate}) OR {_any_bound(aliases)})"


def _rowtime_of(query: m.Query, alias: str) -> str:
    return _q(flat(alias, query.input(alias).rowtime))


def _et_of(alias: str) -> str:
    return _q(et(alias))


def join_condition(join: m.Join, query: m.Query, sides: list[str], before: tuple[str, ...] = ()) -> str | None:
    """`sides`: the stream inputs of the join (their bound rows pass residual filters).
    `before`: the inputs of an intermediate stream on the left (a cut chain, see `stages`)."""
    c = join.condition
    parts = [f"{spark_sql(a)} = {spark_sql(b)}" for a, b in c.keys]
    if not parts and join.kind in _TABLE_JOINS:
        parts.append("true")
    elif not parts:  # Spark's stream-stream join needs an equality: all rows share one key
        parts.append(f"{_q(flat(join.left_inputs[0], ZERO))} = {_q(flat(join.right, ZERO))}")
    for b in c.time_bounds:
        # engine times (Spark drops state by them); an intermediate input (`before`) has none
        if b.left in before:
            right, left = _rowtime_of(query, b.right), _rowtime_of(query, b.left)
        else:
            right, left = _et_of(b.right), _et_of(b.left)
        bound = []
        if b.low_ms is not None:
            bound.append(f"{right} >= {left} + INTERVAL {b.low_ms} MILLISECONDS")
        if b.high_ms is not None:
            bound.append(f"{right} <= {left} + INTERVAL {b.high_ms} MILLISECONDS")
        if b.left in before and b.origin != "condition" and bound:
            # co-presence (§4) counts the non-null rows only: a NULL-extended input has no window
            bound = [f"({left} IS NULL OR ({' AND '.join(bound)}))"]
        parts.extend(bound)
    if before and join.right in [i.alias for i in query.inputs if i.kind == m.STREAM]:
        low, high = _start_bounds(join, list(before), query)  # implied by the bounds above, on the event time
        right = _et_of(join.right)
        parts.append(f"{right} >= {_q(START)} + INTERVAL {low} MILLISECONDS")
        parts.append(f"{right} <= {_q(START)} + INTERVAL {high} MILLISECONDS")
    parts.extend(_or_bound(spark_sql(r), sides) for r in c.residual)
    return " AND ".join(parts) if parts else None


def output_rowtime(query: m.Query, aliases: list[str] | None = None) -> str:
    """§4: the latest presence start (rowtime + lag) among the non-null stream rows (table rows
    are always present)."""
    streams = [i for i in query.inputs if i.kind == m.STREAM and (aliases is None or i.alias in aliases)]
    starts = [f"{_rowtime_of(query, i.alias)} + INTERVAL {_lag(i)} MILLISECONDS" for i in streams]
    return starts[0] if len(starts) == 1 else f"greatest({', '.join(starts)})"


def _rowtime_column(query: m.Query, aliases: list[str]):
    """The output rowtime as a column."""
    from pyspark.sql import functions as F

    streams = [i for i in query.inputs if i.kind == m.STREAM and i.alias in aliases]
    if len(streams) == 1 and not _lag(streams[0]):
        return F.col(flat(streams[0].alias, streams[0].rowtime))
    return F.expr(output_rowtime(query, aliases))


def _event_time(query: m.Query, aliases: list[str]):
    """The output rowtime as engine time: one stream without a lag keeps its event-time column
    (and with it Spark's watermark, which a later aggregation needs)."""
    from pyspark.sql import functions as F

    streams = [i for i in query.inputs if i.kind == m.STREAM and i.alias in aliases]
    if len(streams) == 1 and not _lag(streams[0]):
        return F.col(et(streams[0].alias))
    return engine_time(F.col(ROWTIME_COLUMN))


def _lag(item: m.Input) -> int:
    return getattr(item.window, "lag_ms", 0) or 0


def order_delay(query: m.Query) -> int:
    """How long after the watermark a NULL-extended row may still come: every preserved row
    waits at most for its partners' reach, which no window sum exceeds. Stream-table joins
    decide at once."""
    if all(j.join_type in ("INNER", "CROSS") or j.kind in _TABLE_JOINS + (m.BUCKETED,) for j in query.joins):
        return 0
    return sum(getattr(i.window, "size_ms", 0) for i in query.inputs if i.kind == m.STREAM)


def spark_sql(expression: str) -> str:
    """Our dialect's SQL -> Spark SQL; the output ROWTIME becomes the computed column."""
    tree = sqlglot.parse_one(expression, read=StreamJoin)
    for col in list(tree.find_all(exp.Column)):
        if not col.table and col.name == "ROWTIME" and not col.this.quoted:
            replacement = exp.column(ROWTIME_COLUMN)
        elif col.table:  # alias.column -> `alias__column`
            replacement = exp.Column(this=exp.Identifier(this=flat(col.table, col.name), quoted=True))
        else:
            continue
        tree = replacement if col is tree else tree
        col.replace(replacement)
    for floor in list(tree.find_all(exp.Floor)):
        if floor.args.get("to"):  # FLOOR(ts TO HOUR): Spark spells it date_trunc('HOUR', ts)
            trunc = exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(floor.text("to").upper()), floor.this])
            tree = trunc if floor is tree else tree
            floor.replace(trunc)
    return tree.sql(dialect="spark")


def _q(name: str) -> str:
    return f"`{name}`"
