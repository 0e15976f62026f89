"""Where the batch interval join's keyed probe runs (`BatchJoin.keyed_rows`): which joins it
can find the pairs of (`keyed_sides`), and the Spark task (`probe_task`) or the driver
(`DriverProbe`) that runs `operator.interval_probe`."""

from __future__ import annotations

import base64
import pickle

import pyarrow as pa

from streamjoin.io.formats import BOUND
from streamjoin.io.staging import InputSpec
from streamjoin.plan.model import Join, Query, Script


def probe_task(name: str, batches):
    """A task of `BatchJoin.keyed_rows`: its buckets' rows of the job's `Probe` (local property `name`)."""
    from pyspark import TaskContext

    from streamjoin.operator.interval_probe import probe

    value = TaskContext.get().getLocalProperty(name)
    if value is None:
        raise RuntimeError(f"the keyed probe's job came without its local property {name}")
    job = pickle.loads(base64.b64decode(value))
    for batch in batches:
        for bucket in batch.column(0).to_pylist():
            yield from probe(job, bucket).to_batches()


def staged_fields(spec: InputSpec) -> list[pa.Field]:
    """An input's columns as its steps hold them (io.formats.staged_schema, without the bound)."""
    from streamjoin.io.formats import staged_schema

    return [f for f in staged_schema(spec.schema) if f.name != BOUND]


# the key types the keyed probe hashes (operator.interval_probe.key_hash) and the column types
# it carries as they are
_KEY_TYPES = (pa.types.is_integer, pa.types.is_string, pa.types.is_boolean, pa.types.is_timestamp)
_CARRIED = (*_KEY_TYPES, pa.types.is_floating, pa.types.is_date, pa.types.is_decimal)


def keyed_sides(join: Join, left: InputSpec, right: InputSpec) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Each input's key columns (in key-pair order) when the keyed probe can find the join's pairs:
    every key pair two plain columns of one type (integers, strings, booleans, timestamps), no
    other condition than the keys and the time range, and every column a plain type; else None."""
    import sqlglot.expressions as exp

    c = join.condition
    if not c.keys or c.residual:
        return None
    keys: tuple[list[str], list[str]] = ([], [])
    types = [{f.name: f.type for f in staged_fields(spec)} for spec in (left, right)]
    for pair in c.keys:
        for n, (expression, spec) in enumerate(zip(pair, (left, right), strict=True)):
            if not isinstance(expression, exp.Column) or expression.table != spec.alias or expression.name not in types[n]:
                return None
            keys[n].append(expression.name)
        a, b = types[0][keys[0][-1]], types[1][keys[1][-1]]
        if a != b or not any(test(a) for test in _KEY_TYPES):
            return None
    if not all(any(test(t) for test in _CARRIED) for side in types for t in side.values()):
        return None
    return tuple(keys[0]), tuple(keys[1])


def keyed_query(script: Script, query: Query, join: Join) -> bool:
    """Whether the keyed probe can find `join`'s pairs (`keyed_sides`), from the streams as
    declared (before their inputs are staged: `lower.strategy.batch_reason`)."""
    from types import SimpleNamespace

    from streamjoin.io.types import arrow_schema

    sides = [SimpleNamespace(alias=a, schema=arrow_schema(script.relation(query.input(a).relation).columns))
             for a in (join.left_inputs[-1], join.right)]
    return keyed_sides(join, *sides) is not None


def flat_schema(specs):
    """The Spark schema of the probe's rows: every input's staged columns, flat under its alias."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from streamjoin.lower.columns import flat

    return from_arrow_schema(pa.schema([pa.field(flat(s.alias, f.name), f.type) for s in specs for f in staged_fields(s)]))


class DriverProbe:
    """The keyed probe run by the driver itself (`lower.physical`: on a local master by default): one index of the window (every
    bucket in this process, `operator.interval_probe`'s cache) and no Spark job a micro-batch. The
    output columns come from Arrow where they are plain columns (`arrow_output`), else from Spark
    over the probe's rows; either way as the tasks' frame types them (`schema`)."""

    def __init__(self, query: Query, specs, planned, project):
        from pyspark.sql.pandas.types import to_arrow_schema

        from streamjoin.lower.columns import flat

        self.schema = to_arrow_schema(planned.schema, timezone="UTC", error_on_duplicated_field_names_in_struct=True)
        self.flat = flat_schema(specs)
        self.project = project
        columns = {flat(spec.alias, f.name) for spec in specs for f in staged_fields(spec)}
        self.output = arrow_output(query, [spec.alias for spec in specs], columns)

    def rows(self, spark, job) -> pa.Table:
        from streamjoin.operator.interval_probe import probe

        joined = probe(job, 0)
        if self.output is not None:
            return self.output(joined).cast(self.schema)
        return self.project(spark.createDataFrame(joined, schema=self.flat)).toArrow()


def arrow_output(query: Query, aliases: list[str], columns: set[str]):
    """The query's output columns and `__rowtime` over the probe's flat rows, in Arrow: when it has
    no WHERE, no input a lag, and every output column is an input's column or ROWTIME (as Spark
    resolves names: without regard to case); else None."""
    import pyarrow.compute as pc
    import sqlglot.expressions as exp

    from streamjoin.lower.columns import ROWTIME_COLUMN, flat, lag

    streams = [query.input(a) for a in query.streams() if a in aliases]
    if query.where is not None or not streams or any(lag(s) for s in streams):
        return None
    by_lower: dict[str, list[str]] = {}
    for name in columns:
        by_lower.setdefault(name.lower(), []).append(name)

    def column(name: str) -> str | None:
        found = by_lower.get(name.lower(), [])
        return found[0] if len(found) == 1 else None

    picks = []
    for c in query.output:
        e = c.expression
        if isinstance(e, exp.Column) and not e.table and e.name == "ROWTIME" and not e.this.quoted:
            picks.append(ROWTIME_COLUMN)
        else:
            picks.append(column(flat(e.table, e.name)) if isinstance(e, exp.Column) and e.table in aliases else None)
    rowtimes = [column(flat(s.alias, s.rowtime)) for s in streams]
    if None in picks or None in rowtimes:
        return None
    names = [*(c.name for c in query.output), ROWTIME_COLUMN]

    def output(joined: pa.Table) -> pa.Table:
        times = [joined[r] for r in rowtimes]  # (Spark's greatest: the latest non-NULL one)
        rowtime = times[0] if len(times) == 1 else \
            pc.max_element_wise(*[t.cast(pa.int64()) for t in times], skip_nulls=True).cast(times[0].type)
        return pa.Table.from_arrays([rowtime if p == ROWTIME_COLUMN else joined[p] for p in picks] + [rowtime], names)

    return output
