"""The column-wise ASOF engine (streamjoin.operator.asof_columns) gives the row engine's answer
(streamjoin.operator.asof_join, checked against the reference by tests/lower/test_differential.py)
on random event sequences fed in random steps, with its state stored and loaded between steps."""

from __future__ import annotations

import pickle
import random

import pytest
from operator_helpers import COLUMNS, KEYS, batch, events, steps_of
from streamjoin.operator.asof_columns import AsofColumns
from streamjoin.operator.engine import new_group
from streamjoin.operator.group import INF, Condition, Side, Spec
from streamjoin.plan.model import Emit, JoinKind, JoinType
from streamjoin.plan.windows import CURRENT_ROW


def spec(op: str, join_type: JoinType) -> Spec:
    keys = (('scope["l"]["k"]', 'scope["r"]["k"]'), ('scope["l"]["c"]', 'scope["r"]["c"]'))
    return Spec(JoinKind.ASOF, join_type, Emit.FINAL, Side("l", CURRENT_ROW), Side("r", CURRENT_ROW), keys=keys, asof_op=op)


def by_rows(the_spec: Spec, steps: list[tuple[list[tuple], float]]) -> list[tuple]:
    group, cond = new_group(the_spec), Condition(the_spec)
    out = []
    for rows, limit in steps:
        for t, side, seq, k, c in rows:
            values = {"id": seq, "k": k, "c": c}
            group.add(side, t, seq, values)
        out += [(o.rowtime_us, o.left["id"], None if o.right is None else o.right["id"]) for o in group.advance(limit, cond)]
        group = pickle.loads(pickle.dumps(group))
    return out


def by_columns(the_spec: Spec, steps: list[tuple[list[tuple], float]]) -> list[tuple]:
    group = AsofColumns.for_spec(the_spec, KEYS, COLUMNS)
    out = []
    for rows, limit in steps:
        if rows:
            group.add(batch(rows))
        frame = group.advance(limit)
        if frame is not None:
            out += [(int(t), int(li), None if ri is None or ri != ri else int(ri))
                    for t, li, ri in zip(frame["sj_t"], frame["l_id"], frame["r_id"], strict=True)]
        state = pickle.loads(pickle.dumps(group.to_state()))
        group = AsofColumns.for_spec(the_spec, KEYS, COLUMNS)
        group.load_state(state)
    return out


@pytest.mark.parametrize("op", ["<=", "<"])
@pytest.mark.parametrize("join_type", [JoinType.LEFT, JoinType.INNER])
@pytest.mark.parametrize("seed", range(12))
def test_the_column_engine_answers_as_the_row_engine_for_random_steps(op, join_type, seed):
    rng = random.Random(f"asof-columns-{seed}")
    steps = steps_of(rng, events(rng, rng.randrange(0, 60)))
    the_spec = spec(op, join_type)
    assert by_columns(the_spec, steps) == by_rows(the_spec, steps)


def test_a_left_row_takes_the_latest_arrival_among_right_rows_of_one_rowtime():
    group = AsofColumns.for_spec(spec("<=", JoinType.LEFT), KEYS, COLUMNS)
    group.add(batch([(1000, 1, 0, 1, "a"), (1000, 1, 1, 1, "a"), (1000, 0, 2, 1, "a"), (1000, 0, 3, 2, "a")]))
    frame = group.advance(INF)
    assert frame["r_id"].tolist() == [1, None]
    assert group.size() == 1  # the latest right row of key (1, a)


def test_packing_turns_a_partition_into_one_row_per_group_that_unpacks_to_its_rows():
    import pyarrow as pa
    from streamjoin.operator.columns import pack, unpack

    batches = [pa.RecordBatch.from_pydict({"sj_g": [3, 1, 3], "sj_t": [1, 2, 3], "v": ["a", None, "c"]}),
               pa.RecordBatch.from_pydict({"sj_g": [1], "sj_t": [4], "v": ["d"]})]
    packed = pa.Table.from_batches(list(pack(iter(batches))))
    assert packed["sj_g"].to_pylist() == [1, 3]
    chunks = {g: unpack([blob]) for g, blob in zip(packed["sj_g"].to_pylist(), packed["sj_blob"].to_pylist(), strict=True)}
    assert chunks[1]["sj_t"].tolist() == [2, 4] and chunks[1]["v"].tolist() == [None, "d"]
    assert chunks[3]["sj_t"].tolist() == [1, 3] and chunks[3]["v"].tolist() == ["a", "c"]
    assert list(pack(iter([]))) == []
