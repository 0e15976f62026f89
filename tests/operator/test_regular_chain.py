"""A chain of regular joins on streamjoin's operator (`operator.regular_chain`), in plain Python:
after every instant, its changelog folded is the SQL join of the inputs as they stand (two
append-only streams and a table changed by primary key), whatever the join types (LEFT SEMI and
LEFT ANTI too: issue 67), whichever
earlier input the second join's ON reads, with the state pickled (a restart) in the middle."""

from __future__ import annotations

import pickle
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamjoin.operator.engine import new_condition, new_group
from streamjoin.operator.group import DELETE, INSERT, Side, Spec
from streamjoin.operator.regular_chain import ChainSpec
from streamjoin.plan.model import Emit, JoinKind, JoinType

TYPES = (JoinType.INNER, JoinType.LEFT, JoinType.RIGHT, JoinType.FULL, JoinType.SEMI, JoinType.ANTI)


def chain(first: JoinType, second: JoinType, via: str, residual: str | None = None) -> ChainSpec:
    """a JOIN b ON a.k = b.k, then JOIN c ON {via}.x = c.id (c: a table keyed by id)."""
    return ChainSpec(
        aliases=("a", "b", "c"),
        stages=(Spec(JoinKind.REGULAR, first, Emit.CHANGES, Side("a"), Side("b"), keys=(('scope["a"]["k"]', 'scope["b"]["k"]'),)),
                Spec(JoinKind.REGULAR, second, Emit.CHANGES, Side("b"), Side("c"),
                     keys=((f'scope["{via}"]["x"]', 'scope["c"]["id"]'),), residual=residual)),
        emit=Emit.CHANGES,
        changing=((), (), ("id",)),
    )


def joined(left: list[tuple], right: list[dict], on, join_type: JoinType, width: int) -> list[tuple]:
    """The SQL join of rows (tuples of per-input dicts, None: NULL-extended) with `right`."""
    out = []
    matched = set()
    for row in left:
        partners = [n for n, r in enumerate(right) if on(row, r)]
        if join_type.filters:  # each row once, its right input NULL: with a match (SEMI), without (ANTI)
            out += [(*row, None)] if bool(partners) == (join_type == JoinType.SEMI) else []
            continue
        out += [(*row, right[n]) for n in partners]
        matched.update(partners)
        if not partners and join_type in (JoinType.LEFT, JoinType.FULL):
            out.append((*row, None))
    if join_type in (JoinType.RIGHT, JoinType.FULL):
        out += [(*(None,) * width, r) for n, r in enumerate(right) if n not in matched]
    return out


def sql_chain(spec: ChainSpec, via: str, a: list, b: list, c: dict) -> Counter:
    def value(row, alias, column):
        v = row[spec.aliases.index(alias)]
        return None if v is None else v.get(column)

    first = joined([(r,) for r in a], b, lambda row, r: value(row, "a", "k") is not None and value(row, "a", "k") == r["k"],
                   spec.stages[0].join_type, 1)
    second = joined(first, list(c.values()), lambda row, r: value(row, via, "x") is not None and value(row, via, "x") == r["id"],
                    spec.stages[1].join_type, 2)
    return Counter(_flat(row) for row in second)


def _flat(sides) -> tuple:
    return tuple(None if s is None else tuple(sorted((k, v) for k, v in s.items() if k != "__change")) for s in sides)


def fold(content: Counter, out) -> None:
    for o in out:
        row = _flat(o.sides)
        if o.op == INSERT:
            content[row] += 1
        else:
            assert o.op == DELETE and content[row] > 0, f"-D of {row}, which is not in the view"
            content[row] -= 1
            if not content[row]:
                del content[row]


event = st.tuples(
    st.integers(0, 2),  # input
    st.integers(1, 4),  # instant
    st.sampled_from([1, 2, 3, None]),  # a / b: k; c: id
    st.sampled_from([1, 2, 3, None]),  # a / b: x
    st.booleans(),  # c: a delete
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TYPES), st.sampled_from(TYPES), st.sampled_from(["a", "b"]), st.lists(event, min_size=4, max_size=24))
def test_a_chain_of_regular_joins_folds_to_the_sql_join_of_the_inputs_as_they_stand_after_every_instant(first, second, via, events):
    spec = chain(first, second, via)
    group, cond = new_group(spec), new_condition(spec)
    a, b, c = [], [], {}
    content: Counter = Counter()
    by_instant = sorted({t for _, t, *_ in events})
    for n, instant in enumerate(by_instant):
        for seq, (side, t, k, x, delete) in enumerate(events):
            if t != instant:
                continue
            if side == 2:
                if k is None:
                    continue  # a primary key is never NULL
                if delete:
                    c.pop(k, None)
                    group.add(2, t, seq, {"id": k, "__change": "-"})
                else:
                    c[k] = {"id": k, "v": seq}
                    group.add(2, t, seq, {"id": k, "v": seq, "__change": "+"})
            else:
                row = {"k": k, "x": x, "n": seq}
                (a if side == 0 else b).append(row)
                group.add(side, t, seq, dict(row))
        fold(content, group.advance(instant, cond))
        assert content == sql_chain(spec, via, a, b, c), f"after instant {instant}"
        if n == len(by_instant) // 2:  # a restart: the state goes through the state store's pickle
            group = pickle.loads(pickle.dumps(group))


def test_rows_of_one_instant_pair_before_any_null_extended_row_is_written():
    spec = chain(JoinType.LEFT, JoinType.LEFT, "b")
    group, cond = new_group(spec), new_condition(spec)
    group.add(0, 5, 0, {"k": 1, "x": None, "n": 0})
    group.add(1, 5, 0, {"k": 1, "x": 7, "n": 1})
    group.add(2, 5, 0, {"id": 7, "v": "t", "__change": "+"})
    out = group.advance(5, cond)
    assert [(o.op, [s and s.get("n", s.get("v")) for s in o.sides]) for o in out] == [("+I", [0, 1, "t"])]
    group.add(2, 6, 1, {"id": 7, "__change": "-"})  # the table row goes: the pair is NULL-extended again
    out = group.advance(6, cond)
    assert [(o.op, o.rowtime_us, [s and s.get("n", s.get("v")) for s in o.sides]) for o in out] == [
        ("-D", 5, [0, 1, "t"]), ("+I", 5, [0, 1, None])]


def test_a_residual_on_a_null_extended_input_is_null_so_the_row_matches_nothing():
    spec = chain(JoinType.LEFT, JoinType.INNER, "a", residual='scope["b"]["n"] is not None and scope["b"]["n"] > 0')
    group, cond = new_group(spec), new_condition(spec)
    group.add(0, 1, 0, {"k": 9, "x": 1, "n": 0})  # no b: b.n is NULL
    group.add(2, 1, 0, {"id": 1, "v": "t", "__change": "+"})
    assert group.advance(1, cond) == []
    assert group.size() == 3  # a, its NULL-extended combination, the table row


def test_a_changing_table_read_alone_keeps_its_latest_rows_and_an_update_withdraws_the_old_one():
    """A chain of no joins (a changing table's groups, lower._running_over_custom): the group holds
    each key's latest row (its size keeps the state alive between micro-batches), and an update in a
    later batch withdraws the row it replaces, a delete withdraws it alone."""
    spec = ChainSpec(("t",), (), Emit.CHANGES, (("id",),))
    group, cond = new_group(spec), new_condition(spec)
    group.add(0, 1, 0, {"id": 1, "v": "a", "__change": "+"})
    assert [(o.op, o.sides[0]["v"]) for o in group.advance(1, cond)] == [("+I", "a")]
    assert group.size() == 1
    group = pickle.loads(pickle.dumps(group))
    group.add(0, 2, 1, {"id": 1, "v": "b", "__change": "+"})
    group.add(0, 2, 2, {"id": 2, "v": "c", "__change": "+"})
    group.add(0, 2, 3, {"id": 2, "__change": "-"})
    assert [(o.op, o.sides[0]["v"]) for o in group.advance(2, cond)] == [("-D", "a"), ("+I", "b"), ("+I", "c"), ("-D", "c")]
    assert group.size() == 1


def test_a_changing_row_whose_join_key_is_null_keeps_its_group_so_its_update_withdraws_its_null_row():
    """The processor drops a group whose state holds no rows (size() 0). A changing table's row with
    a NULL join key pairs with nothing and sits in no join key's rows, only under its primary key:
    before 2026-11-28 its group was dropped, and its update or delete then withdrew nothing, leaving
    its NULL-extended row in the view for good."""
    spec = Spec(JoinKind.REGULAR, JoinType.LEFT, Emit.CHANGES, Side("c"), Side("r"),
                (("scope['c']['region']", "scope['r']['id']"),), None, changing=(("id",), ("id",)))
    cond, group = new_condition(spec), new_group(spec)
    group.add(0, 10, 1, {"id": 1, "region": None, "__change": "+"})
    assert [(o.op, o.left) for o in group.advance(10, cond)] == [(INSERT, {"id": 1, "region": None})]
    assert group.size() == 1  # kept: the processor stores the group
    group = pickle.loads(pickle.dumps(group))  # the next micro-batch's group, from its state
    group.add(0, 20, 2, {"id": 1, "region": 7, "__change": "+"})  # its update
    assert [(o.op, o.left) for o in group.advance(20, cond)] == [(DELETE, {"id": 1, "region": None}),
                                                                  (INSERT, {"id": 1, "region": 7})]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TYPES), st.lists(event, min_size=4, max_size=24))
def test_one_regular_join_of_a_stream_and_a_changing_table_folds_to_the_sql_join_after_every_instant(join_type, events):
    """`a JOIN c ON a.x = c.id` on `operator.regular_join` (the one-join engine), semi and anti too."""
    spec = Spec(JoinKind.REGULAR, join_type, Emit.CHANGES, Side("a"), Side("c"), keys=(('scope["a"]["x"]', 'scope["c"]["id"]'),),
                changing=((), ("id",)))
    group, cond = new_group(spec), new_condition(spec)
    a, c = [], {}
    content: Counter = Counter()
    for n, instant in enumerate(sorted({t for _, t, *_ in events})):
        for seq, (side, t, k, x, delete) in enumerate(events):
            if t != instant or side == 1:
                continue
            if side == 2:
                if k is not None:  # a primary key is never NULL
                    if delete:
                        c.pop(k, None)
                    else:
                        c[k] = {"id": k, "v": seq}
                    group.add(1, t, seq, {"id": k, "__change": "-"} if delete else {"id": k, "v": seq, "__change": "+"})
                continue
            row = {"k": k, "x": x, "n": seq}
            a.append(row)
            group.add(0, t, seq, dict(row))
        for o in group.advance(instant, cond):
            row = _flat((o.left, o.right))
            content[row] += 1 if o.op == INSERT else -1
            assert content[row] >= 0, f"-D of {row}, which is not in the view"
            if not content[row]:
                del content[row]
        expected = joined([(r,) for r in a], list(c.values()),
                          lambda row, r: row[0]["x"] is not None and row[0]["x"] == r["id"], join_type, 1)
        assert content == Counter(_flat(row) for row in expected), f"after instant {instant}"
        if n == 1:
            group = pickle.loads(pickle.dumps(group))
