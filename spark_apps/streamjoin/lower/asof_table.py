"""`stream ASOF [LEFT] JOIN table` (SEMANTICS §8 against a §7 snapshot; also a table's rows, in a
query over tables only): each left row takes the one table row with equal keys whose ordering value
is nearest on the allowed side. Ties: the row with the smallest primary key when the table declares
one (RisingWave's rule: a table's rows have no arrival order; docs/semantics-decisions.md), else
the later table row. Stateless: the snapshot is indexed once on the driver (per key, sorted by the
ordering value) and shipped with the function that looks each micro-batch's rows up
(`mapInArrow`), so a stream row is final the moment it is read."""

from __future__ import annotations

import bisect

from streamjoin.lower.columns import bound_column
from streamjoin.lower.expressions import python_code
from streamjoin.operator.group import sql_lambda
from streamjoin.plan.model import Join, JoinType, Query


def asof_lookup(stream_frame, table_frame, query: Query, join: Join, primary_key: tuple[str, ...] = ()):
    """The stream frame with each row's nearest table row (support checked: ON conditions beyond
    the keys and the inequality are on one side each, `lower.custom.asof_filters`); `primary_key`:
    the table's, which breaks ties (smallest first)."""
    from pyspark.sql.types import StructType

    from streamjoin.lower.custom import asof_filters

    left_alias, right_alias = join.left_inputs[-1], join.right
    keys = [(python_code(a), python_code(b)) for a, b in join.condition.keys]
    asof = join.condition.asof  # left OP right
    op = asof.op
    left_filter, right_filter = (python_code(f) if f is not None else None for f in asof_filters(join))
    index = _index(table_frame.toArrow().to_pylist(), right_alias, [b for _, b in keys], python_code(asof.right),
                   right_filter, primary_key)
    stream_names = stream_frame.columns
    table_names = table_frame.columns
    schema = StructType(stream_frame.schema.fields + table_frame.schema.fields)
    outer = join.join_type == JoinType.LEFT
    left_keys, left_value = [a for a, _ in keys], python_code(asof.left)
    bound = bound_column(left_alias)

    def lookup(batches):
        import pyarrow as pa

        key_fns = [sql_lambda(k) for k in left_keys]
        value_fn = sql_lambda(left_value)
        admits = sql_lambda(left_filter) if left_filter else None
        arrow_schema = None
        for batch in batches:
            out = []
            for row in batch.to_pylist():
                if row.get(bound):
                    out.append({**row, **dict.fromkeys(table_names)})
                    continue
                scope = {left_alias: _unflat(row, left_alias)}
                key = tuple(f(scope) for f in key_fns)
                value = value_fn(scope)
                failed = admits is not None and admits(scope) is not True  # its own ON condition: no match
                match = None if failed or None in key or value is None else _nearest(index.get(key), value, op)
                if match is None and not outer:
                    continue
                out.append({**row, **(match if match is not None else dict.fromkeys(table_names))})
            if arrow_schema is None:
                from pyspark.sql.pandas.types import to_arrow_schema

                arrow_schema = to_arrow_schema(schema, timezone="UTC")
            yield pa.RecordBatch.from_pylist([{n: r.get(n) for n in (*stream_names, *table_names)} for r in out], schema=arrow_schema)

    return stream_frame.mapInArrow(lookup, schema)


def _unflat(row: dict, alias: str) -> dict:
    prefix = f"{alias}__"
    return {k[len(prefix):]: v for k, v in row.items() if k.startswith(prefix)}


def _index(rows: list[dict], alias: str, key_code: list[str], value_code: str, filter_code: str | None = None,
           primary_key: tuple[str, ...] = ()) -> dict:
    """key tuple -> (sorted ordering values, rows in the same order); among equal values the one
    `_nearest` takes (the last) is the smallest primary key's, or without one the later table row.
    `filter_code`: the join's ON condition on the table alone (a row failing it is no candidate)."""
    key_fns = [sql_lambda(k) for k in key_code]
    value_fn = sql_lambda(value_code)
    admits = sql_lambda(filter_code) if filter_code else None
    groups: dict = {}
    for position, row in enumerate(rows):
        scope = {alias: _unflat(row, alias)}
        if admits is not None and admits(scope) is not True:
            continue
        key = tuple(f(scope) for f in key_fns)
        value = value_fn(scope)
        if None in key or value is None:
            continue  # a NULL key or ordering value matches nothing
        groups.setdefault(key, []).append((value, position, row))
    index = {}
    for key, entries in groups.items():
        if primary_key:  # the smallest key last among equal values (None keys first: never preferred)
            entries.sort(key=lambda e: _key_order(e[2], alias, primary_key), reverse=True)
            entries.sort(key=lambda e: e[0])
        else:
            entries.sort(key=lambda e: (e[0], e[1]))
        index[key] = ([e[0] for e in entries], [e[2] for e in entries])
    return index


def _key_order(row: dict, alias: str, primary_key: tuple[str, ...]) -> tuple:
    values = [row.get(f"{alias}__{k}") for k in primary_key]
    return tuple((v is None, v) for v in values)  # a NULL key sorts above every value: never preferred


def _nearest(entry, value, op: str):
    """`value OP table value`: the table row nearest to `value` on the allowed side; among equal
    ordering values the last one in the index (`_index`)."""
    if entry is None:
        return None
    values, rows = entry
    if op in (">=", ">"):  # table value <= (or <) the stream's: the largest such
        i = (bisect.bisect_right(values, value) if op == ">=" else bisect.bisect_left(values, value)) - 1
        return rows[i] if i >= 0 else None
    i = bisect.bisect_left(values, value) if op == "<=" else bisect.bisect_right(values, value)
    if i >= len(values):
        return None
    last = bisect.bisect_right(values, values[i]) - 1  # ties: the later table row
    return rows[last]
