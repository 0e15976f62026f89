"""Every seed query parses, analyses and explains exactly as its golden file says.

The fixtures in tests/fixtures/seeds/ are the seeds' queries with our DDL in front; each file's
header names its seed section and lists the corrections made to the seed's obvious typos.
Regenerate the golden files after an intended change with: UPDATE_GOLDEN=1 make test
"""

import os
from pathlib import Path

import pytest
from streamjoin.lower.explain import explain_text
from streamjoin.plan import compile_sql
from streamjoin.plan import model as m

FIXTURES = Path(__file__).parents[1] / "fixtures"
SEEDS = sorted((FIXTURES / "seeds").glob("*.sql"))


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_seed_query_explains_as_its_golden_file_says(path):
    text = explain_text(compile_sql(path.read_text(), path.name))
    golden = FIXTURES / "explain" / f"{path.stem}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def test_every_seed_section_with_a_query_has_a_fixture():
    assert len(SEEDS) >= 38
    assert {p.name[:4] for p in SEEDS} == {"s000", "s001", "s002", "s003", "s004"}


def _final(name):
    """The final query as the analyzer classifies it (before the plan's rewrites)."""
    from streamjoin.plan.analyzer import analyze

    return analyze((FIXTURES / "seeds" / f"{name}.sql").read_text()).queries[-1]


def test_the_changelog_rewrite_turns_a_stream_join_with_a_select_table_view_into_a_changelog_join():
    script = compile_sql((FIXTURES / "seeds" / "s004_right_join.sql").read_text())
    assert script.final.joins[0].kind == m.JoinKind.CHANGELOG
    assert [i.kind for i in script.final.inputs] == [m.Kind.STREAM, m.Kind.STREAM]


def test_seed_join_kinds_are_classified_as_semantics_defines():
    expected = {
        "s000_example_with_on": m.JoinKind.STREAM_STREAM_WINDOW,
        "s000_beast_simple_join": m.JoinKind.SNAPSHOT,
        "s000_city_sales": m.JoinKind.BUCKETED,
        "s001_asof_inner": m.JoinKind.ASOF,
        "s001_window_join": m.JoinKind.WINDOW_TVF,
        "s001_interval_join": m.JoinKind.INTERVAL,
        "s001_temporal_join": m.JoinKind.TEMPORAL,
        "s004_right_join": m.JoinKind.SNAPSHOT,
        "s004_within": m.JoinKind.STREAM_STREAM_WINDOW,
    }
    assert {name: _final(name).joins[0].kind for name in expected} == expected


def test_range_windows_give_symmetric_time_bounds_of_one_minute():
    [bound] = _final("s000_example_with_on").joins[0].condition.time_bounds
    assert (bound.left, bound.right, bound.low_ms, bound.high_ms) == ("oq", "sp", -60_000, 60_000)


def test_kinesis_orders_window_bounds_let_an_order_wait_an_hour_for_its_shipment():
    q = _final("s003_orders_shipments")
    assert q.input("s").window == m.RangeWindow(0) and q.input("o").window == m.RangeWindow(3_600_000)
    [bound] = q.joins[0].condition.time_bounds
    # o.rowtime - s.rowtime in [-1h, 0]: the order came at most an hour before the shipment
    assert (bound.left, bound.right, bound.low_ms, bound.high_ms) == ("s", "o", -3_600_000, 0)


def test_interval_join_derives_the_equivalent_windows():
    q = _final("s001_interval_join")
    assert q.input("s1").window == m.RangeWindow(0)
    assert q.input("s2").window == m.RangeWindow(60_000)


def test_using_columns_come_first_and_coalesced_in_star():
    q = _final("s000_beast_left_join")
    assert (q.output[0].name, m.sql(q.output[0].expression)) == ("animal_id", "COALESCE(e.animal_id, a.animal_id)")
    assert [c.name for c in q.output].count("animal_id") == 1


def test_extra_table_filters_of_an_inner_stream_table_join_are_applied_before_loading():
    q = compile_sql((FIXTURES / "seeds" / "s000_beast_extra_filters.sql").read_text()).final
    assert [m.sql(f) for f in q.input("a").pushed_filters] == ["a.edible", "NOT a.poisonous"]


def test_lenses_join_without_on_joins_on_key():
    assert [(m.sql(a), m.sql(b)) for a, b in _final("s004_key_join").joins[0].condition.keys] == [("customers._key", "orders._key")]


def test_lenses_within_gives_both_streams_the_same_window():
    q = _final("s004_within")
    assert q.input("customers").window == q.input("orders").window == m.RangeWindow(5_000)


def test_asof_condition_is_written_left_to_right():
    cond = _final("s001_asof_left").joins[0].condition
    assert (m.sql(cond.asof.left), cond.asof.op, m.sql(cond.asof.right)) == ("sp.stock_time", ">=", "md.market_time")
    assert [(m.sql(a), m.sql(b)) for a, b in cond.keys] == [("sp.stock_name", "md.stock_name")]


def test_comma_join_takes_its_condition_from_where():
    join = _final("s000_comma_join_where").joins[0]
    assert join.join_type == "INNER" and join.condition.from_where
    assert [(m.sql(a), m.sql(b)) for a, b in join.condition.keys] == [("oq.ticker", "sp.ticker")]


def test_output_rowtime_is_selectable_as_rowtime():
    first = _final("s000_example_with_on").output[0]
    assert (first.name, m.sql(first.expression)) == ("rowtime", "ROWTIME")
