"""Lowering a two-stream join onto streamjoin's own operator (`streamjoin.operator`).

Used where Spark's native join cannot give SEMANTICS.md's answer (`plan.operators`): ROWS
windows, EMIT EAGER / CHANGES, ASOF joins and TUMBLE / HOP window joins. The two staged inputs
become one union (a side tag, the rowtime in microseconds, the input position, both sides'
columns), each with a watermark of its lateness + 1 ms: Spark then counts a row at the clock
as on time, and its watermark (clock - 1 ms) reaches T exactly when instant T is complete.
"""

from __future__ import annotations

import os

import sqlglot
from sqlglot import exp

from streamjoin.dialect import StreamJoin
from streamjoin.errors import Unsupported
from streamjoin.io.source import SEQUENCE, staged_stream
from streamjoin.io.staging import BOUND, END_US, InputSpec
from streamjoin.lower.stream_join import ET_COLUMN, engine_time
from streamjoin.operator.engine import Side, Spec
from streamjoin.plan import model as m
from streamjoin.plan import operators
from streamjoin.plan.windows import BucketWindow, RangeWindow, RowsWindow

OP = "op"  # the changelog's column (EMIT CHANGES): +I or -D
GROUPS = int(os.environ.get("STREAMJOIN_OPERATOR_GROUPS", "32"))  # hash buckets of the join keys


def check(script: m.Script, query: m.Query) -> None:
    """What the custom operator runs: one join of two declared streams."""
    relations = {r.name: r for r in script.relations}
    if len(query.joins) != 1 or len(query.inputs) != 2:
        raise Unsupported(
            "a join that needs streamjoin's own operator (ROWS windows, EMIT EAGER/CHANGES, ASOF, TUMBLE/HOP) "
            "must be the query's only join in `run` yet: join further inputs in a view over it"
        )
    join = query.joins[0]
    for i in query.inputs:
        relation = relations[i.relation]
        if relation.view or i.kind != m.STREAM:
            raise Unsupported(f"input '{i.alias}': {join.kind}s with streamjoin's operator read declared streams in `run` yet, "
                              "not tables or views")
        if i.time_window and i.time_window.column != relation.rowtime:
            raise Unsupported(f"input '{i.alias}': {i.time_window.function} must window the stream's rowtime ({relation.rowtime})")
    if query.aggregation is not None:
        raise Unsupported("an aggregation over a join that needs streamjoin's operator is not supported by `run` yet")
    for i in query.inputs:
        if isinstance(i.window, BucketWindow):
            raise Unsupported(f"input '{i.alias}': a bucket window (ORDER BY FLOOR(ROWTIME TO ...)) joined with another stream "
                              "runs on Spark's join under EMIT FINAL only; use TUMBLE(...) window joins")
    if join.kind == m.ASOF:
        left, op, right = join.condition.asof
        lrt = f"{join.left_inputs[0]}.{query.input(join.left_inputs[0]).rowtime}"
        rrt = f"{join.right}.{query.input(join.right).rowtime}"
        if _plain(left) != lrt or _plain(right) != rrt:
            raise Unsupported(f"an ASOF join of two streams orders by their rowtimes: write {rrt} {_flip(op)} {lrt}")
        if join.condition.residual:
            raise Unsupported("an ASOF join takes equality keys and one inequality; filter other conditions in WHERE")
        if query.emit == "EAGER":
            raise Unsupported("EMIT EAGER is not defined for ASOF joins (SEMANTICS §6 covers window joins): use FINAL or CHANGES")
    if query.emit == "CHANGES" and any(o.name == OP for o in query.output):
        raise Unsupported(f"EMIT CHANGES adds a column '{OP}': rename the output column '{OP}'")
    compile_condition(query, join)  # fails here, before any data is read, if Python cannot evaluate it


def _plain(expression: str) -> str:
    tree = sqlglot.parse_one(expression, read=StreamJoin)
    return f"{tree.table}.{tree.name}" if isinstance(tree, exp.Column) else expression


def _flip(op: str) -> str:
    return {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]


def _python(expression: str) -> str:
    from sqlglot.executor.python import Python

    tree = sqlglot.parse_one(expression, read=StreamJoin)
    return Python().generator(identify=True, comments=False).generate(tree)


def compile_condition(query: m.Query, join: m.Join) -> tuple[tuple, str | None]:
    """(key pairs, residual) as Python source over `scope[alias][column]`."""
    from streamjoin.operator.engine import Condition

    c = join.condition
    keys = tuple((_python(a), _python(b)) for a, b in c.keys)
    residual = " AND ".join(f"({r})" for r in c.residual) if c.residual else None
    code = _python(residual) if residual else None
    try:
        Condition(Spec("window", "INNER", "FINAL", Side("l", ("none",)), Side("r", ("none",)), keys, code))
    except Exception as error:  # noqa: BLE001 - the SQL has something Python cannot evaluate
        raise Unsupported(f"the join condition cannot be evaluated by streamjoin's operator: {error}") from None
    return keys, code


def _side(query: m.Query, alias: str) -> Side:
    window = query.input(alias).window
    if isinstance(window, RowsWindow):
        return Side(alias, ("rows", window.count, tuple(window.partition_by)))
    if isinstance(window, RangeWindow):
        return Side(alias, ("range", window.size_ms * 1000, window.lag_ms * 1000))
    return Side(alias, ("none",))


def spec_for(query: m.Query) -> Spec:
    join = query.joins[0]
    keys, residual = compile_condition(query, join)
    left, right = join.left_inputs[0], join.right
    kind = {m.ASOF: "asof", m.WINDOW_TVF: "tvf", m.CHANGELOG: "changelog"}.get(join.kind, "window")
    tvf = None
    if kind == "tvf":
        tw = query.input(left).time_window
        tvf = (tw.size_ms * 1000, tw.slide_ms * 1000, ("window_start", "window_end"), ("window_start", "window_end"),
               tw.offset_ms * 1000)
    return Spec(
        kind=kind,
        join_type=join.join_type,
        emit=query.emit,
        left=_side(query, left),
        right=_side(query, right),
        keys=keys,
        residual=residual,
        asof_op=_flip(join.condition.asof[1]) if join.condition.asof else None,
        tvf=tvf,
        table_key=_table_key(query, join) if kind == "changelog" else (),
    )


def _table_key(query: m.Query, join: m.Join) -> tuple[str, ...]:
    """What identifies a row of a changelog table: `_key` (a topic's key); () = its join-key values."""
    return ("_key",) if "_key" in query.input(join.right).columns else ()


def lower_custom(spark, script: m.Script, query: m.Query, specs: dict[str, InputSpec], flat, spark_sql):
    """The streaming frame: output columns, __rowtime, __op and the operator's meta columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType, TimestampType

    from streamjoin.operator.processor import NULL_US, JoinProcessor

    check(script, query)
    join = query.joins[0]
    spec = spec_for(query)
    aliases = [join.left_inputs[0], join.right]
    group_keys = operators.group_keys(query, join)
    frames, fields = [], []
    for side, alias in enumerate(aliases):
        s = specs[alias]
        df = (
            staged_stream(spark, s, sequence=True)
            .withColumn(ET_COLUMN, engine_time(F.col(s.rowtime)))
            .withWatermark(ET_COLUMN, f"{s.lateness_ms + 1} milliseconds")
        )
        frames.append((alias, s, df))
        fields += [(side, flat(alias, f.name), f.name, f.dataType) for f in df.schema.fields
                   if f.name not in (BOUND, SEQUENCE, ET_COLUMN)]
        if query.input(alias).time_window:
            from pyspark.sql.types import TimestampType

            fields += [(side, flat(alias, c), c, TimestampType()) for c in ("window_start", "window_end")]
    key_types = []
    for pair in group_keys:
        types = [frames[side][2].selectExpr(_local(pair[side], aliases[side], frames[side][1])).schema[0].dataType
                 for side in (0, 1)]
        key_types.append(types[0].simpleString() if types[0] == types[1] else
                         "double" if all(t.typeName() in ("integer", "long", "short", "byte", "float", "double", "decimal") for t in types)
                         else "string")
    union = None
    for side, (alias, s, df) in enumerate(frames):
        cols = [F.lit(side).alias("sj_side"), F.unix_micros(F.col(s.rowtime)).alias("sj_t"), F.col(SEQUENCE).alias("sj_seq"), F.col(BOUND).alias("sj_bound")]
        for n, pair in enumerate(group_keys):
            cols.append(F.expr(_local(pair[side], alias, s)).cast(key_types[n]).alias(f"sj_k{n}"))
        if not group_keys:
            cols.append(F.lit(0).alias("sj_k0"))
        for other, name, column, dtype in fields:
            # timestamps travel as microseconds (pandas' own timestamps end in 2262), NULL as
            # processor.NULL_US (a NULL would make the column float); the rowtime of a bound row
            # (the end of input is one) is NULL too: `sj_t` carries it
            if other == side and column == s.rowtime:
                cols.append(F.when(~F.col(BOUND), F.unix_micros(F.col(column))).otherwise(F.lit(NULL_US)).alias(name))
            elif other == side and column in df.columns and isinstance(dtype, TimestampType):
                cols.append(F.coalesce(F.unix_micros(F.col(column)), F.lit(NULL_US)).alias(name))
            elif other == side and column in df.columns:
                cols.append(F.col(column).alias(name))
            elif isinstance(dtype, TimestampType):
                cols.append(F.lit(NULL_US).alias(name))
            else:
                cols.append(F.lit(None).cast(dtype).alias(name))
        part = df.select(*cols)
        union = part if union is None else union.unionByName(part)
    # groups are hash buckets of the keys: a group holds many keys (the engine indexes them), so
    # the per-group cost of the state store calls is paid per bucket, not per key
    keyed = [f"sj_k{n}" for n in range(len(group_keys))]
    union = union.withColumn("sj_g", F.pmod(F.hash(*keyed), F.lit(GROUPS)) if keyed else F.lit(0))
    group_cols = ["sj_g"]
    out_fields = [StructField(name, LongType() if isinstance(dtype, TimestampType) else dtype, True) for _, name, _, dtype in fields]
    out_fields += [
        StructField("__rowtime", LongType(), True),
        StructField("__op", StringType(), True),
        StructField("__meta", BooleanType(), True),
        StructField("__group", StringType(), True),
        StructField("__state", LongType(), True),
    ]
    end_ms = END_US // 1000 - max(s.lateness_ms for _, s, _ in frames) - 1
    columns = [(side, name, column, dtype.simpleString()) for side, name, column, dtype in fields]
    joined = union.groupBy(*group_cols).transformWithStateInPandas(
        JoinProcessor(spec, columns, end_ms), StructType(out_fields), "Append", "EventTime"
    )
    joined = joined.select(*[  # microseconds back to timestamps
        F.timestamp_micros(F.col(f.name)).alias(f.name) if f.name == "__rowtime" or isinstance(dtype, TimestampType) else F.col(f.name)
        for f, dtype in zip(out_fields, [d for *_, d in fields] + [None] * 5, strict=True)
    ])
    meta = F.col("__meta")
    if query.where:
        joined = joined.where(meta | F.expr(spark_sql(query.where)))
    selected = [F.expr(spark_sql(c.expression)).alias(c.name) for c in query.output]
    if query.emit == "CHANGES":
        selected.insert(0, F.col("__op").alias(OP))
    return joined.select(*selected, "__rowtime", "__meta", "__group", "__state")


def _local(expression: str, alias: str, spec: InputSpec) -> str:
    """A key expression over one input's own (unprefixed) columns."""
    tree = sqlglot.parse_one(expression, read=StreamJoin)
    for col in list(tree.find_all(exp.Column)):
        if col.table == alias:
            replacement = exp.Column(this=exp.Identifier(this=col.name, quoted=True))
            if col is tree:
                tree = replacement
            else:
                col.replace(replacement)
    return tree.sql(dialect="spark")


