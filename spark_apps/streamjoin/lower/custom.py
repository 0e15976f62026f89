"""Lowering a two-stream join onto streamjoin's own operator (`streamjoin.operator`).

Used where Spark's native join cannot give SEMANTICS.md's answer (`lower.strategy`): ROWS
windows, EMIT EAGER / CHANGES, ASOF joins, TUMBLE / HOP window joins and changelog joins. The
two staged inputs become one union (a side tag, the rowtime in microseconds, the input position,
both sides' columns), each with a watermark of its lateness + 1 ms on its engine time: Spark then
counts a row at the clock as on time, and its watermark (clock - 1 ms) reaches T exactly when
instant T is complete.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError

from streamjoin.errors import Unsupported
from streamjoin.io.formats.columns import OP
from streamjoin.io.sources.source import SEQUENCE, staged_stream
from streamjoin.io.sources.staging import BOUND, END_US, InputSpec
from streamjoin.lower.columns import ET_COLUMN, engine_time, flat, q
from streamjoin.lower.expressions import local_sql, python_code, spark_sql
from streamjoin.lower.physical import PhysicalPlan
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.operator.group import Side, Spec
from streamjoin.operator.regular_chain import ChainSpec
from streamjoin.plan.conditions import one_sided
from streamjoin.plan.model import Emit, Join, JoinKind, Query
from streamjoin.plan.windows import RangeWindow, RowsWindow

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def compile_condition(join: Join) -> tuple[tuple, str | None, tuple]:
    """(key pairs, residual, side filters) as Python source over `scope[alias][column]`;
    Unsupported when Python cannot evaluate the condition. An ASOF join's residual is its ON
    conditions on one side each (`asof_filters`), a filter of that side's rows."""
    from streamjoin.operator.group import Condition

    c = join.condition
    try:
        keys = tuple((python_code(a), python_code(b)) for a, b in c.keys)
        residual, filters = None, (None, None)
        if join.kind in (JoinKind.ASOF, JoinKind.ASOF_TABLE):
            filters = tuple(python_code(both) if both is not None else None for both in asof_filters(join))
        elif c.residual:
            residual = python_code(conjunction(c.residual))
        Condition(Spec(JoinKind.STREAM_STREAM_WINDOW, join.join_type, Emit.FINAL, Side(join.left_inputs[-1]),
                       Side(join.right), keys, residual, side_filters=filters))
    except (SqlglotError, SyntaxError) as error:  # the SQL has something Python cannot evaluate
        raise Unsupported(f"the join condition cannot be evaluated by streamjoin's operator: {error}") from None
    return keys, residual, filters


def conjunction(parts) -> exp.Expression:
    both = exp.Paren(this=parts[0].copy())
    for r in parts[1:]:
        both = exp.And(this=both, expression=exp.Paren(this=r.copy()))
    return both


def asof_filters(join: Join) -> tuple[exp.Expression | None, exp.Expression | None]:
    """An ASOF join's ON conditions beyond its keys and inequality, as (on the left input, on the
    right input): a left row that fails its own matches nothing (ASOF LEFT: NULL-extended, as ON
    means for an outer join; WHERE would drop it), a right row that fails its own is no
    candidate. A condition on both sides is rejected (`lower.support`)."""
    lefts, rights, _ = one_sided(join.condition.residual, set(join.left_inputs), join.right)
    return (conjunction(lefts) if lefts else None), (conjunction(rights) if rights else None)


def spec_for(query: Query, changing: tuple = ((), ())) -> Spec | ChainSpec:
    """`changing`: each input's primary key when it is a table fed by its changes (a regular join).
    A chain of regular joins: a `ChainSpec` of one Spec per join."""
    if len(query.joins) != 1:  # a chain (of none: a changing table read alone, its changes as they come)
        return ChainSpec(chain_aliases(query), tuple(_join_spec(query, j) for j in query.joins),
                         query.emit, changing)
    return _join_spec(query, query.joins[0], changing)


def chain_aliases(query: Query) -> tuple[str, ...]:
    """The inputs in join order: the first join's left input, then each join's right one."""
    if not query.joins:
        return (query.inputs[0].alias,)
    return (query.joins[0].left_inputs[0], *(j.right for j in query.joins))


def _join_spec(query: Query, join: Join, changing: tuple = ((), ())) -> Spec:
    keys, residual, filters = compile_condition(join)
    left, right = join.left_inputs[-1], join.right
    return Spec(
        kind=join.kind,
        join_type=join.join_type,
        emit=query.emit,
        left=_side(query, left),
        right=_side(query, right),
        keys=keys,
        residual=residual,
        asof_op=_FLIP[join.condition.asof.op] if join.condition.asof else None,
        time_window=query.input(left).time_window if join.kind == JoinKind.WINDOW_TVF else None,
        table_key=_table_key(query, join) if join.kind == JoinKind.CHANGELOG else (),
        side_filters=filters,
        changing=changing,
    )


def _side(query: Query, alias: str) -> Side:
    window = query.input(alias).window
    return Side(alias, window if isinstance(window, RangeWindow | RowsWindow) else None)


def _table_key(query: Query, join: Join) -> tuple[str, ...]:
    """What identifies a row of a changelog table: `_key` (a topic's key); () = its join-key values."""
    return ("_key",) if "_key" in query.input(join.right).columns else ()


def lower_custom(spark, plan: PhysicalPlan, specs: dict[str, InputSpec], options: LoweringOptions, changing: tuple = ((), ())):
    """The streaming frame of the query `plan` runs on the operator: output columns, __rowtime,
    __op and the operator's meta columns."""
    from pyspark.sql import functions as F

    query = plan.source
    joined = custom_joined(spark, plan, specs, options, changing)
    selected = [F.expr(spark_sql(c.expression)).alias(c.name) for c in query.output]
    if query.emit == Emit.CHANGES:
        selected.insert(0, F.col("__op").alias(OP))
    return joined.select(*selected, "__rowtime", "__meta", "__group", "__state")


def custom_joined(spark, plan: PhysicalPlan, specs: dict[str, InputSpec], options: LoweringOptions, changing: tuple = ((), ())):
    """The operator's rows after WHERE: every input column (flat names), __rowtime (a timestamp),
    __op (+I, -D) and the meta columns (__meta rows: a group's hold and state). The plan's group
    key groups them (`PhysicalPlan.group_key`: a join's key pairs, a chain's one column per
    input; () for one group), its join's column-wise engine runs them where their types allow."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        BinaryType,
        BooleanType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    from streamjoin.operator.columns import BLOB, GROUP, pack
    from streamjoin.operator.processor import ColumnarProcessor, JoinProcessor

    query = plan.source
    aliases = list(chain_aliases(query))
    keys = plan.group_key
    frames, fields = _side_frames(spark, query, [specs[a] for a in aliases], aliases)
    # through the operator the columns travel as sj_c0, sj_c1, ...: Spark parses some names it is
    # handed (a user's column may hold a backtick or a dot); they get their flat names back after it
    flat_names = [name for _, name, _, _ in fields]
    fields = [(side, f"sj_c{i}", column, dtype) for i, (side, _, column, dtype) in enumerate(fields)]
    types, same_types = _key_types(keys, frames, aliases)
    keyed = [f"sj_k{n}" for n in range(len(keys))]
    end_ms = END_US // 1000 - max(spec.lateness_ms for _, spec, _ in frames) - 1
    columns = [(side, name, column, dtype.simpleString()) for side, name, column, dtype in fields]
    spec = spec_for(query, changing)
    columnar = len(aliases) == 2 and same_types and plan.joins[0].by_column is not None and plain_columns(columns)
    carried = fields
    if columnar:  # the column engine needs only the columns the query reads after the join
        used = _used_after_join(query)
        carried = fields if used is None else [f for f, name in zip(fields, flat_names, strict=True) if name in used]
    union = None
    for side, (alias, input_spec, df) in enumerate(frames):
        part = df.select(*_union_columns(side, alias, input_spec, df, keys, types, carried))
        union = part if union is None else union.unionByName(part)
    # groups are hash buckets of the keys: a group holds many keys (the engine indexes them), so
    # the per-group cost of the state store calls is paid per bucket, not per key
    union = union.withColumn("sj_g", F.pmod(F.hash(*keyed), F.lit(options.operator_groups)) if keyed else F.lit(0))
    out_fields = [StructField(name, LongType() if isinstance(dtype, TimestampType) else dtype, True) for _, name, _, dtype in fields]
    out_fields += [
        StructField("__rowtime", LongType(), True),
        StructField("__op", StringType(), True),
        StructField("__meta", BooleanType(), True),
        StructField("__group", StringType(), True),
        StructField("__state", LongType(), True),
    ]
    if columnar:
        processor = ColumnarProcessor(spec, columns, end_ms, keyed, {name for _, name, _, _ in carried})
        union = union.mapInArrow(pack, StructType([StructField(GROUP, IntegerType()), StructField(BLOB, BinaryType())]))
    else:
        processor = JoinProcessor(spec, columns, end_ms)
    joined = union.groupBy("sj_g").transformWithStateInPandas(processor, StructType(out_fields), "Append", "EventTime")
    joined = joined.select(*[  # microseconds back to timestamps, flat names back
        (F.timestamp_micros(F.col(f.name)) if f.name == "__rowtime" or isinstance(dtype, TimestampType) else F.col(f.name)).alias(name)
        for f, dtype, name in zip(out_fields, [d for *_, d in fields] + [None] * 5, [*flat_names, *(f.name for f in out_fields[-5:])],
                                  strict=True)
    ])
    if query.where is not None:
        joined = joined.where(F.col("__meta") | F.expr(spark_sql(query.where)))
    return joined


def _side_frames(spark, query: Query, specs: list[InputSpec], aliases: list[str]):
    """Each side's staged stream (with its watermark on engine time, lateness + 1 ms) and the
    fields (side, flat name, column, Spark type) of both sides, window columns included."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    from streamjoin.lower.running import input_windows

    frames, fields = [], []
    # the windows of a regular join's (or a changing table's) TUMBLE / HOP input are its rows' columns
    own_windows = not query.joins or all(j.kind == JoinKind.REGULAR for j in query.joins)
    for side, (alias, spec) in enumerate(zip(aliases, specs, strict=True)):
        df = (
            staged_stream(spark, spec, sequence=True)
            .withColumn(ET_COLUMN, engine_time(F.col(q(spec.rowtime))))
            .withWatermark(ET_COLUMN, f"{spec.lateness_ms + 1} milliseconds")
        )
        if own_windows and query.input(alias).time_window:
            df = input_windows(df, query.input(alias), flat_names=False, keep=BOUND)
        frames.append((alias, spec, df))
        fields += [(side, flat(alias, f.name), f.name, f.dataType) for f in df.schema.fields
                   if f.name not in (BOUND, SEQUENCE, ET_COLUMN)]
        if query.input(alias).time_window and not own_windows:
            fields += [(side, flat(alias, c), c, TimestampType()) for c in ("window_start", "window_end")]
    return frames, fields


_NUMBERS = ("integer", "long", "short", "byte", "float", "double", "decimal")


# the column types the column-wise engines pass through as pandas hands them over
_COLUMNAR_TYPES = ("bigint", "int", "smallint", "tinyint", "double", "float", "string", "boolean", "timestamp", "timestamp_ntz")


def plain_columns(columns: list[tuple[int, str, str, str]]) -> bool:
    """Whether every input column has a type the column-wise engines (`lower.strategy.by_column`)
    carry as it is."""
    return all(c[3] in _COLUMNAR_TYPES for c in columns)


def _used_after_join(query: Query) -> set[str] | None:
    """The flat names of the input columns the query's output and WHERE read (None: a column
    without its input's alias, so all of them)."""
    used = set()
    for expression in [c.expression for c in query.output] + ([query.where] if query.where is not None else []):
        for column in expression.find_all(exp.Column):
            if column.table:
                used.add(flat(column.table, column.name))
            elif column.name != "ROWTIME" or column.this.quoted:
                return None
    return used


def _key_types(keys, frames, aliases) -> tuple[list[str], bool]:
    """One type per group key both sides cast to: theirs when equal, else double or string; and
    whether both sides' types were equal for every key."""
    types, same = [], True
    for pair in keys:
        both = [frames[side][2].selectExpr(local_sql(pair[side], aliases[side])).schema[0].dataType for side in range(len(pair))]
        equal = all(t == both[0] for t in both)
        types.append(both[0].simpleString() if equal else "double" if all(t.typeName() in _NUMBERS for t in both) else "string")
        same = same and equal
    return types, same


def _union_columns(side: int, alias: str, spec: InputSpec, df, keys, types: list[str], fields) -> list:
    """One side's columns in the union: side, rowtime (us), position, bound flag, group keys, and
    every field of both sides (the other side's NULL). Timestamps travel as microseconds (pandas'
    own timestamps end in 2262), NULL as processor.NULL_US (a NULL would make the column float);
    the rowtime of a bound row (the end of input is one) is NULL too: `sj_t` carries it."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    from streamjoin.operator.processor import NULL_US

    cols = [F.lit(side).alias("sj_side"), F.unix_micros(F.col(q(spec.rowtime))).alias("sj_t"), F.col(SEQUENCE).alias("sj_seq"),
            F.col(BOUND).alias("sj_bound")]
    for n, pair in enumerate(keys):
        key = F.expr(local_sql(pair[side], alias)).cast(types[n])
        if types[n] == "timestamp":  # as microseconds too (a bound row's rowtime key, the end of input, is past 2262)
            key = F.when(~F.col(BOUND), F.unix_micros(key))
        cols.append(key.alias(f"sj_k{n}"))
    if not keys:
        cols.append(F.lit(0).alias("sj_k0"))
    for other, name, column, dtype in fields:
        mine = other == side and column in df.columns
        if mine and column == spec.rowtime:
            cols.append(F.when(~F.col(BOUND), F.unix_micros(F.col(q(column)))).otherwise(F.lit(NULL_US)).alias(name))
        elif mine and isinstance(dtype, TimestampType):
            cols.append(F.coalesce(F.unix_micros(F.col(q(column))), F.lit(NULL_US)).alias(name))
        elif mine:
            cols.append(F.col(q(column)).alias(name))
        elif isinstance(dtype, TimestampType):
            cols.append(F.lit(NULL_US).alias(name))
        else:
            cols.append(F.lit(None).cast(dtype).alias(name))
    return cols
