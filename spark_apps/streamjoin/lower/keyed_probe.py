"""Where the batch interval join's keyed probe runs (`BatchJoin.keyed_rows`): which joins it
can find the pairs of (`keyed_sides`), and the Spark task that runs `operator.interval_probe`."""

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
