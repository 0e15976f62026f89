"""The column-wise ROWS engine (streamjoin.operator.rows_columns) gives the row engine's answer
(streamjoin.operator.window_join, checked against the reference by tests/lower/test_differential.py)
for inner joins of ROWS windows partitioned by their keys, on random event sequences fed in random
steps, with its state stored and loaded between steps."""

from __future__ import annotations

import pickle
import random

import pytest
from operator_helpers import COLUMNS, KEYS, batch, events, steps_of
from streamjoin.operator.engine import new_group
from streamjoin.operator.group import Condition, Side, Spec
from streamjoin.operator.rows_columns import RowsColumns
from streamjoin.plan.model import Emit, JoinKind, JoinType
from streamjoin.plan.windows import RowsWindow

KEYED = (('scope["l"]["k"]', 'scope["r"]["k"]'), ('scope["l"]["c"]', 'scope["r"]["c"]'))


def spec(left: int, right: int, emit: Emit = Emit.FINAL) -> Spec:
    return Spec(JoinKind.STREAM_STREAM_WINDOW, JoinType.INNER, emit, Side("l", RowsWindow(left, ("k", "c"))),
                Side("r", RowsWindow(right, ("c", "k"))), keys=KEYED)


def by_rows(the_spec: Spec, steps: list[tuple[list[tuple], float]]) -> list[tuple]:
    group, cond = new_group(the_spec), Condition(the_spec)
    out = []
    for rows, limit in steps:
        for t, side, seq, k, c in rows:
            group.add(side, t, seq, {"id": seq, "k": k, "c": c})
        out += [(o.rowtime_us, o.left["id"], o.right["id"]) for o in group.advance(limit, cond)]
        group = pickle.loads(pickle.dumps(group))
    return out


def by_columns(the_spec: Spec, steps: list[tuple[list[tuple], float]]) -> tuple[list[tuple], list[int]]:
    group = RowsColumns.for_spec(the_spec, KEYS, COLUMNS)
    out, sizes = [], []
    for rows, limit in steps:
        if rows:
            group.add(batch(rows))
        frame = group.advance(limit)
        if frame is not None:
            out += [(int(t), int(li), int(ri)) for t, li, ri in zip(frame["sj_t"], frame["l_id"], frame["r_id"], strict=True)]
        sizes.append(group.size())
        state = pickle.loads(pickle.dumps(group.to_state()))
        group = RowsColumns.for_spec(the_spec, KEYS, COLUMNS)
        group.load_state(state)
    return out, sizes


@pytest.mark.parametrize("counts", [(0, 0), (0, 2), (3, 1)])
@pytest.mark.parametrize("seed", range(12))
def test_the_column_engine_answers_as_the_row_engine_for_random_steps(counts, seed):
    rng = random.Random(f"rows-columns-{seed}")
    steps = steps_of(rng, events(rng, rng.randrange(0, 80)))
    the_spec = spec(*counts)
    got, sizes = by_columns(the_spec, steps)
    assert got == by_rows(the_spec, steps)
    assert sizes[-1] == 0  # at the end of input every row has left


def test_a_row_pairs_with_the_latest_rows_of_its_key_that_arrived_before_it():
    group = RowsColumns.for_spec(spec(0, 1), KEYS, COLUMNS)
    # right rows 0, 1, 2 of key (1, a); left row 3 sees the latest two; left row 4 (key 2) nothing;
    # at the same rowtime a right row (5) comes after the left rows (§2), so it pairs with left row 3
    group.add(batch([(500, 1, 0, 1, "a"), (500, 1, 1, 1, "a"), (500, 1, 2, 1, "a"), (1000, 0, 3, 1, "a"),
                     (1000, 0, 4, 2, "a"), (1000, 1, 5, 1, "a")]))
    frame = group.advance(1000)
    assert list(zip(frame["l_id"], frame["r_id"], strict=True)) == [(3, 1), (3, 2), (3, 5)]
    assert group.size() == 1 + 1 + 2  # left: the latest of keys (1, a) and (2, a); right: the latest two of (1, a)
