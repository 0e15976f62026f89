"""Semi and anti joins of two streams in RANGE windows on streamjoin's operator (`operator.window_join`,
issue 67), in plain Python against the reference (tests/reference.py `two_way`): each left row at
most once, when its first match is known (SEMI), or when its window closes without one (ANTI, as
a LEFT join's NULL-extended row; EAGER at once, CHANGES withdrawn at its first match)."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import Side as RefSide
from reference import fold, two_way
from streamjoin.operator.engine import new_condition, new_group
from streamjoin.operator.group import INF, Side, Spec
from streamjoin.plan.model import Emit, JoinKind, JoinType
from streamjoin.plan.windows import RangeWindow

rows = st.lists(st.tuples(st.integers(0, 6), st.sampled_from([1, 2, None])), min_size=1, max_size=8)


def run_operator(join_type: JoinType, emit: Emit, size: tuple[int, int], left: list, right: list, step: int):
    """The operator's (op, rowtime ms, left index, None) rows; the clock advances `step` ms at a time."""
    spec = Spec(JoinKind.STREAM_STREAM_WINDOW, join_type, emit, Side("l", RangeWindow(size[0])), Side("r", RangeWindow(size[1])),
                keys=(('scope["l"]["k"]', 'scope["r"]["k"]'),))
    group, cond = new_group(spec), new_condition(spec)
    events = sorted([(t, 0, n, {"k": k, "n": n}) for n, (t, k) in enumerate(left)]
                    + [(t, 1, n, {"k": k, "n": n}) for n, (t, k) in enumerate(right)])
    out = []
    for t, side, seq, values in events:
        group.add(side, t * 1000, seq, values)
    for limit in [*range(0, 20, step), INF]:
        for o in group.advance(limit if limit == INF else limit * 1000, cond):
            assert o.right is None, o
            out.append((o.op, o.rowtime_us // 1000, o.left["n"], None))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([JoinType.SEMI, JoinType.ANTI]), st.sampled_from(list(Emit)), rows, rows,
       st.tuples(st.integers(0, 3), st.integers(0, 3)), st.integers(1, 4))
def test_a_semi_or_anti_join_in_range_windows_gives_the_references_rows(join_type, emit, left, right, size, step):
    ref_left = RefSide("l", [{"rowtime": t, "k": k} for t, k in left], ("range", size[0], 0))
    ref_right = RefSide("r", [{"rowtime": t, "k": k} for t, k in right], ("range", size[1], 0))
    expected = two_way(ref_left, ref_right, join_type.name, lambda a, b: a["k"] is not None and a["k"] == b["k"], emit.value)
    got = run_operator(join_type, emit, size, left, right, step)
    if emit == Emit.CHANGES:
        assert fold(got) == fold(expected)
    else:
        assert Counter(got) == Counter(expected)
    if emit == Emit.FINAL:  # in rowtime order
        assert [r[1] for r in got] == sorted(r[1] for r in got)
