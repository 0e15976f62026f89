"""Which joins the batch interval join's keyed probe (lower.batch.keyed_probe) can find the pairs of:
every key pair two plain columns of one type, no other condition, every column a plain type.
Spark-free: the physical plan decides it from the streams as declared (`keyed_query`)."""

from __future__ import annotations

import pyarrow as pa

from streamjoin.io.formats.files import BOUND
from streamjoin.io.sources.staging import InputSpec
from streamjoin.plan.model import Join, Query, Script


def staged_fields(spec: InputSpec) -> list[pa.Field]:
    """An input's columns as its steps hold them (io.formats.files.staged_schema, without the bound)."""
    from streamjoin.io.formats.files import staged_schema

    return [f for f in staged_schema(spec.schema) if f.name != BOUND]


# the key types the keyed probe hashes (lower.batch.interval_probe.key_hash) and the column types
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
    declared (before their inputs are staged: `batch_reason`, `lower.physical`)."""
    from types import SimpleNamespace

    from streamjoin.io.formats.types import arrow_schema

    sides = [SimpleNamespace(alias=a, schema=arrow_schema(script.relation(query.input(a).relation).columns))
             for a in (join.left_inputs[-1], join.right)]
    return keyed_sides(join, *sides) is not None
