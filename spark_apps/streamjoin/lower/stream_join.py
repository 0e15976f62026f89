"""Lowering a stream-stream join plan onto Spark's native stream-stream join.

Each stream input is a staged file stream (`streamjoin.io`) with a watermark on its rowtime
(delay = the input's allowed lateness, so Spark's watermark is the stream clock of §1). Each
join of the left-deep chain is one `DataFrame.join` whose condition is the plan's keys, residual
and the co-presence time bounds of §4, which is also what lets Spark drop state as the clock
advances. The output rowtime (§4) is the latest presence start among the non-null input rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

from streamjoin.dialect import StreamJoin
from streamjoin.errors import Unsupported
from streamjoin.io.staging import BOUND, InputSpec
from streamjoin.io.types import arrow_schema
from streamjoin.plan import model as m
from streamjoin.plan.windows import RangeWindow

ROWTIME_COLUMN = "__rowtime"
ZERO = "__zero"  # a per-input key column that is 0 for every row (not foldable: it reads the rowtime)
_SPARK_JOIN = {"INNER": "inner", "CROSS": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full"}
_SUPPORTED_KINDS = (m.STREAM_STREAM_WINDOW, m.INTERVAL)


@dataclass
class Lowered:
    frame: object  # the streaming DataFrame of output columns plus __rowtime
    inputs: list[InputSpec]
    columns: list[str]  # output column names, in order
    order_delay_ms: int  # how far behind the watermark output is final (outer joins)


def check_runnable(script: m.Script, query: m.Query) -> None:
    """Raise Unsupported for what this runtime does not run yet, naming it."""
    relations = {r.name: r for r in script.relations}
    if query.aggregation is not None:
        raise Unsupported("GROUP BY is not supported by `run` yet (it comes with the stream-table issue)")
    if query.kind != m.STREAM:
        raise Unsupported("`run` runs streaming queries (SELECT STREAM over streams)")
    if query.emit != "FINAL":
        raise Unsupported(f"EMIT {query.emit} is not supported by `run` yet; EMIT FINAL is")
    for i in query.inputs:
        relation = relations[i.relation]
        if i.kind != m.STREAM:
            raise Unsupported(f"input '{i.alias}' is a table: stream-table joins are not supported by `run` yet")
        if relation.view:
            raise Unsupported(f"input '{i.alias}' is a view: views as inputs are not supported by `run` yet")
        if relation.option("connector", "files") != "files":
            raise Unsupported(f"input '{i.alias}': connector '{relation.option('connector')}' is not supported yet (use 'files')")
        if not relation.option("path"):
            raise Unsupported(f"stream '{relation.name}' needs WITH (path = '...') to be read")
        if not isinstance(i.window, RangeWindow):
            raise Unsupported(f"input '{i.alias}': {type(i.window).__name__} windows are not supported by `run` yet (RANGE windows are)")
    for j in query.joins:
        if j.kind not in _SUPPORTED_KINDS:
            raise Unsupported(f"{j.kind}s are not supported by `run` yet")
    for j in query.joins[:-1]:
        if j.join_type in ("LEFT", "RIGHT", "FULL"):
            # Spark's watermark for the next join runs ahead of the NULL-extended rows this join
            # emits late, so the next join would miss their matches (seen in the differential test).
            raise Unsupported(
                f"a {j.join_type} JOIN followed by another join is not supported by `run` yet; "
                "only the last join of a chain may be an outer join"
            )


def input_specs(script: m.Script, query: m.Query, checkpoint: Path, late_root: Path) -> list[InputSpec]:
    relations = {r.name: r for r in script.relations}
    specs = []
    for i in query.inputs:
        r = relations[i.relation]
        specs.append(
            InputSpec(
                alias=i.alias,
                path=r.option("path"),
                format=(r.option("format") or "json").lower(),
                schema=arrow_schema(r.columns),
                rowtime=r.rowtime,
                lateness_ms=r.lateness_ms,
                state_dir=str(checkpoint / "sources" / i.alias),
                late_dir=str(late_root / i.alias),
            )
        )
    return specs


def lower(spark, script: m.Script, query: m.Query, specs: list[InputSpec]) -> Lowered:
    from pyspark.sql import functions as F

    check_runnable(script, query)
    frames = {s.alias: _input_frame(spark, s) for s in specs}
    joined = frames[query.inputs[0].alias]
    for join in query.joins:
        sides = [*join.left_inputs, join.right]
        keys = [e for pair in join.condition.keys for e in pair]
        guard = _not_bound(sides, [_rowtime_of(query, a) for a in sides], [spark_sql(k) for k in keys])
        condition = " AND ".join(p for p in (join_condition(join, query, sides), guard) if p)
        joined = joined.join(frames[join.right], F.expr(condition), _SPARK_JOIN[join.join_type])
        if join is not query.joins[-1]:
            joined = _one_event_time(joined, query, sides)
    aliases = [i.alias for i in query.inputs]
    if query.where:
        joined = joined.where(F.expr(_or_bound(spark_sql(query.where), aliases)))
    joined = joined.where(F.expr(_not_bound(aliases, [_rowtime_of(query, a) for a in aliases])))
    joined = joined.withColumn(ROWTIME_COLUMN, F.expr(output_rowtime(query)))
    columns = [c.name for c in query.output]
    selected = [F.expr(spark_sql(c.expression)).alias(c.name) for c in query.output]
    frame = joined.select(*selected, F.col(ROWTIME_COLUMN))
    return Lowered(frame, specs, columns, order_delay(query))


def _one_event_time(joined, query: m.Query, aliases: list[str]):
    """Spark allows one event-time column per stream: a joined frame that feeds another join
    keeps the first input's rowtime as its event time; the others become plain timestamps."""
    from pyspark.sql import functions as F

    for alias in aliases[1:]:
        name = flat(alias, query.input(alias).rowtime)
        joined = joined.withColumn(name, F.timestamp_micros(F.unix_micros(F.col(name))))
    return joined


def _input_frame(spark, spec: InputSpec):
    from pyspark.sql import functions as F


    df = spark.readStream.format("streamjoin_staged").option("spec", spec.to_json()).load()
    # Bound rows must reach the watermark operator, and Spark pushes any filter on them below
    # it. So they go through: no join condition accepts them, and they leave after the joins.
    df = df.withWatermark(spec.rowtime, f"{spec.lateness_ms} milliseconds")
    # flat, unique names (alias__column): joined frames can then be re-projected freely
    names = {c: flat(spec.alias, c) for c in df.columns if c != BOUND}
    return df.select(
        *[F.col(c).alias(n) for c, n in names.items()],
        F.col(BOUND).alias(bound_column(spec.alias)),
        (F.unix_micros(F.col(spec.rowtime)) * 0).alias(flat(spec.alias, ZERO)),
    )


def flat(alias: str, column: str) -> str:
    return f"{alias}__{column}"


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
    return f"({' + '.join(flags + anchors)}) = 0"


def _or_bound(predicate: str, aliases) -> str:
    """A filter that lets bound rows through, wherever Spark pushes it."""
    return f"(({predicate}) OR {_any_bound(aliases)})"


def _rowtime_of(query: m.Query, alias: str) -> str:
    return _q(flat(alias, query.input(alias).rowtime))


def join_condition(join: m.Join, query: m.Query, sides: list[str]) -> str | None:
    c = join.condition
    parts = [f"{spark_sql(a)} = {spark_sql(b)}" for a, b in c.keys]
    if not parts:  # Spark's stream-stream join needs an equality: all rows share one key
        parts.append(f"{_q(flat(join.left_inputs[0], ZERO))} = {_q(flat(join.right, ZERO))}")
    for b in c.time_bounds:
        right, left = _rowtime_of(query, b.right), _rowtime_of(query, b.left)
        if b.low_ms is not None:
            parts.append(f"{right} >= {left} + INTERVAL {b.low_ms} MILLISECONDS")
        if b.high_ms is not None:
            parts.append(f"{right} <= {left} + INTERVAL {b.high_ms} MILLISECONDS")
    parts.extend(_or_bound(spark_sql(r), sides) for r in c.residual)
    return " AND ".join(parts) if parts else None


def output_rowtime(query: m.Query) -> str:
    """§4: the latest presence start (rowtime + lag) among the non-null input rows."""
    starts = [f"{_rowtime_of(query, i.alias)} + INTERVAL {i.window.lag_ms} MILLISECONDS" for i in query.inputs]
    return starts[0] if len(starts) == 1 else f"greatest({', '.join(starts)})"


def order_delay(query: m.Query) -> int:
    """How long after the watermark a NULL-extended row may still come: every preserved row
    waits at most for its partners' reach, which no window sum exceeds."""
    if all(j.join_type in ("INNER", "CROSS") for j in query.joins):
        return 0
    return sum(i.window.size_ms for i in query.inputs)


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
    return tree.sql(dialect="spark")


def _q(name: str) -> str:
    return f"`{name}`"
