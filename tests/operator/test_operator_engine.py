"""The custom operator's per-group logic (streamjoin.operator), without Spark: the cases a review
found, each as a small event sequence."""

from __future__ import annotations

import pickle

from streamjoin.operator.engine import new_group
from streamjoin.operator.group import INF, Condition, Side, Spec
from streamjoin.plan.model import Emit, JoinKind, JoinType
from streamjoin.plan.windows import CURRENT_ROW


def changelog(table_key=("_key",), emit=Emit.EAGER, key=('scope["o"]["k"]', 'scope["t"]["k"]')):
    spec = Spec(JoinKind.CHANGELOG, JoinType.LEFT, emit, Side("o", CURRENT_ROW), Side("t", CURRENT_ROW), keys=(key,),
                table_key=table_key)
    return new_group(spec), Condition(spec)


def rows(out):
    return [(o.op, o.rowtime_us, (o.left or {}).get("id"), (o.right or {}).get("v")) for o in out]


def test_a_table_row_that_changes_its_join_key_no_longer_matches_the_old_key():
    group, cond = changelog()
    group.add(1, 1, 0, {"_key": 1, "k": "EU", "v": "eu"})
    group.add(1, 2, 1, {"_key": 1, "k": "US", "v": "us"})
    group.add(0, 3, 0, {"id": "o1", "k": "EU"})
    assert rows(group.advance(INF, cond)) == [("+I", 3, "o1", None)]


def test_a_table_without_key_column_is_keyed_by_its_join_key_values():
    group, cond = changelog(table_key=())
    group.add(1, 1, 0, {"k": "A", "v": "a"})
    group.add(1, 1, 1, {"k": "B", "v": "b"})
    group.add(0, 2, 0, {"id": "o1", "k": "A"})
    assert rows(group.advance(INF, cond)) == [("+I", 2, "o1", "a")]


def test_a_stream_row_meets_the_table_row_of_its_own_instant():
    group, cond = changelog()
    group.add(1, 3, 0, {"_key": 1, "k": "K", "v": "v1"})
    group.add(1, 5, 1, {"_key": 1, "k": "K", "v": "v2"})
    group.add(0, 5, 0, {"id": "o1", "k": "K"})
    assert rows(group.advance(INF, cond)) == [("+I", 5, "o1", "v2")]


def test_an_asof_left_row_with_a_null_key_is_decided_at_once_and_holds_nothing_back():
    spec = Spec(JoinKind.ASOF, JoinType.LEFT, Emit.FINAL, Side("l", CURRENT_ROW), Side("r", CURRENT_ROW),
                keys=(('scope["l"]["k"]', 'scope["r"]["k"]'),), asof_op=">=")
    group, cond = new_group(spec), Condition(spec)
    group.add(0, 1, 0, {"id": "x", "k": None})
    group.add(0, 2, 1, {"id": "y", "k": 1})
    out = group.advance(2, cond)
    assert rows(out) == [("+I", 1, "x", None)]
    assert group.hold() == 2  # only y (a real key) may still be answered
    group = pickle.loads(pickle.dumps(group))
    group.add(1, 4, 0, {"k": 1, "v": "r"})
    assert rows(group.advance(INF, cond)) == [("+I", 4, "y", "r")]


def test_a_changelog_join_on_a_column_other_than_the_topic_key_runs_as_one_group():
    from streamjoin.lower import strategy
    from streamjoin.plan import compile_sql

    sql = """CREATE STREAM customers (_key INTEGER, region VARCHAR, name VARCHAR) WITH (path = '/x');
CREATE STREAM orders (region VARCHAR, item VARCHAR) WITH (path = '/y');
WITH t AS (SELECT TABLE * FROM customers);
SELECT STREAM t.name, orders.item FROM orders LEFT JOIN t ON t.region = orders.region;"""
    query = compile_sql(sql).final  # the changelog rewrite (plan.rewrites.changelog) applied
    assert query.joins[0].kind == JoinKind.CHANGELOG
    # a customer that moves region must meet its old version in the same group
    assert strategy.group_keys(query, query.joins[0]) == ()


def test_a_range_window_row_that_matched_nothing_leaves_null_extended_when_its_window_ends():
    from streamjoin.plan.windows import RangeWindow

    spec = Spec(JoinKind.STREAM_STREAM_WINDOW, JoinType.FULL, Emit.FINAL, Side("l", RangeWindow(10)), Side("r", RangeWindow(10)),
                keys=(('scope["l"]["k"]', 'scope["r"]["k"]'),))
    group, cond = new_group(spec), Condition(spec)
    group.add(0, 1_000, 0, {"id": "a", "k": 1})
    group.add(1, 5_000, 0, {"k": 1, "v": "pair"})  # within a's 10 ms: a pair
    group.add(0, 40_000, 1, {"id": "b", "k": 2})  # nothing for b
    group.add(1, 60_000, 1, {"k": 3, "v": "alone"})  # nothing for it either
    out = rows(group.advance(INF, cond))
    assert sorted(out, key=repr) == sorted([("+I", 5_000, "a", "pair"), ("+I", 40_000, "b", None),
                                            ("+I", 60_000, None, "alone")], key=repr)


def test_a_regular_join_withdraws_the_results_of_a_table_row_that_is_updated_and_null_extends_the_partner_left_alone():
    spec = Spec(JoinKind.REGULAR, JoinType.LEFT, Emit.CHANGES, Side("o"), Side("c"),
                keys=(('scope["o"]["k"]', 'scope["c"]["id"]'),), changing=((), ("id",)))
    group, cond = new_group(spec), Condition(spec)
    group.add(0, 1, 0, {"id": "o1", "k": 1})
    group.add(1, 2, 0, {"id": 1, "v": "ann", "__change": "+"})
    group.add(1, 3, 1, {"id": 1, "v": "anne", "__change": "+"})
    group.add(1, 4, 2, {"id": 1, "v": "anne", "__change": "-"})
    assert rows(group.advance(INF, cond)) == [
        ("+I", 1, "o1", None), ("-D", 1, "o1", None), ("+I", 2, "o1", "ann"),  # the order meets its customer
        ("-D", 2, "o1", "ann"), ("+I", 1, "o1", None), ("-D", 1, "o1", None), ("+I", 3, "o1", "anne"),  # updated
        ("-D", 3, "o1", "anne"), ("+I", 1, "o1", None)]  # deleted: the order is alone again
