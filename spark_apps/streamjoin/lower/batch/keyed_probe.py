"""Where the batch interval join's keyed probe runs (`BatchJoin.keyed_rows`): which joins it
can find the pairs of (`keyed_sides`), and the Spark task (`probe_task`) or the driver
(`DriverProbe`) that runs `lower.batch.interval_probe`."""

from __future__ import annotations

import base64
import pickle

import pyarrow as pa

from streamjoin.lower.probe_keys import staged_fields
from streamjoin.plan.model import Query


def probe_task(name: str, batches):
    """A task of `BatchJoin.keyed_rows`: its buckets' rows of the job's `Probe` (local property `name`)."""
    from pyspark import TaskContext

    from streamjoin.lower.batch.interval_probe import probe

    value = TaskContext.get().getLocalProperty(name)
    if value is None:
        raise RuntimeError(f"the keyed probe's job came without its local property {name}")
    job = pickle.loads(base64.b64decode(value))
    for batch in batches:
        for bucket in batch.column(0).to_pylist():
            yield from probe(job, bucket).to_batches()


def flat_schema(specs):
    """The Spark schema of the probe's rows: every input's staged columns, flat under its alias."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from streamjoin.lower.columns import flat

    return from_arrow_schema(pa.schema([pa.field(flat(s.alias, f.name), f.type) for s in specs for f in staged_fields(s)]))


class DriverProbe:
    """The keyed probe run by the driver itself (`lower.physical`: on a local master by default): one index of the window (every
    bucket in this process, `lower.batch.interval_probe`'s cache) and no Spark job a micro-batch. The
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
        from streamjoin.lower.batch.interval_probe import probe

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
