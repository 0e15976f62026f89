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


# The facts that matter of each seed, written by hand from the seeds and SEMANTICS.md (not copied
# from the goldens, which the code writes): which engine runs its first join, how long each input's
# rows are kept, and when rows are emitted. (kind, engine, retention); every seed emits FINAL rows.
BATCH, OPERATOR, NATIVE, LOOKUP = ("streamjoin's batch interval join", "streamjoin's stateful join operator",
                                   "Spark's native stream-stream join", None)
# Lenses' SELECT TABLE joins of streams, which `run` refuses (tests/lower/test_run_accepted_fixtures.py)
REFUSED = "none: `run` does not run a SELECT TABLE over streams yet"
MIN = "rows until the join clock passes ROWTIME + 1 MINUTE"
SNAPSHOT_HELD = "read once at query start, broadcast and held in memory"
LATEST = "the latest row per key (_key) of its changelog stream, for the whole run"
FACTS = {
    "s000_beast_extra_filters": ("stream-table snapshot join", LOOKUP, ["'a'", SNAPSHOT_HELD]),
    "s000_beast_left_join": ("stream-table snapshot join", LOOKUP, ["'a'", SNAPSHOT_HELD]),
    "s000_beast_simple_join": ("stream-table snapshot join", LOOKUP, ["'a'", SNAPSHOT_HELD]),
    "s000_city_sales": ("bucketed table-preserving join", LOOKUP, ["per hour bucket of 'cs'", "unmatched table row is emitted NULL-extended"]),
    "s000_comma_join_where": ("stream-stream window join", BATCH, [f"'oq' {MIN}", f"'sp' {MIN}"]),
    "s000_cross_join": ("stream-stream window join", BATCH, [f"'oq' {MIN}", f"'sp' {MIN}"]),
    "s000_cross_join_where": ("stream-stream window join", BATCH, [f"'oq' {MIN}", f"'sp' {MIN}"]),
    "s000_example_with_natural": ("stream-stream window join", BATCH, [f"'oq' {MIN}", f"'sp' {MIN}"]),
    "s000_example_with_on": ("stream-stream window join", BATCH, [f"'oq' {MIN}", f"'sp' {MIN}"]),
    "s000_example_with_rows": ("stream-stream window join", OPERATOR, ["'oq': the last 6 rows", "'sp': the last 6 rows"]),
    "s000_example_with_using": ("stream-stream window join", BATCH, [f"'oq' {MIN}", f"'sp' {MIN}"]),
    "s000_full_join": ("stream-stream window join", BATCH, [f"'oq' {MIN}; a row that matched nothing is then emitted NULL-extended",
                                                           f"'sp' {MIN}; a row that matched nothing is then emitted NULL-extended"]),
    "s000_inner_example": ("stream-stream window join", BATCH, [f"'oq' {MIN}", f"'sp' {MIN}"]),
    "s000_left_join": ("stream-stream window join", BATCH, [f"'oq' {MIN}; a row that matched nothing", f"'sp' {MIN}\n"]),
    "s000_multiway": ("stream-stream window join", NATIVE, ["'b1' rows until the join clock passes ROWTIME + 1 HOUR",
                                                           "'asks' rows until the join clock passes ROWTIME + 2 SECOND"]),
    "s000_right_join": ("stream-stream window join", BATCH, [f"'oq' {MIN}\n", f"'sp' {MIN}; a row that matched nothing"]),
    "s001_asof_inner": ("ASOF join", OPERATOR, ["rows of 'md' per key (md.stock_name), the latest per ordering value"]),
    "s001_asof_left": ("ASOF join", OPERATOR, ["rows of 'md' per key (md.stock_name), the latest per ordering value"]),
    "s001_interval_join": ("interval join", BATCH, ["'s1' rows until the join clock passes ROWTIME\n",
                                                    "'s2' rows until the join clock passes ROWTIME + 1 MINUTE"]),
    "s001_temporal_join": ("process-time temporal join", LOOKUP, ["no state: 'products' is re-read at every micro-batch"]),
    "s001_temporal_join_where": ("process-time temporal join", LOOKUP, ["no state: 'version' is re-read at every micro-batch"]),
    "s001_window_join": ("window join", OPERATOR, ["per window and key, until the join clock passes window_end"]),
    "s002_login_failures": ("stream-stream window join", BATCH, ["'lf' rows until the join clock passes ROWTIME\n", f"'tx' {MIN}"]),
    "s002_login_failures_named_window": ("stream-stream window join", BATCH, [f"'SuspectLoginFailures' {MIN}", f"'Transactions' {MIN}"]),
    "s002_match_bids_and_asks": ("stream-stream window join", OPERATOR, ["'b' rows until the join clock passes ROWTIME + 10 SECOND",
                                                                         "'a': the last 1 row of the whole input"]),
    "s002_match_bids_and_asks_named_window": ("stream-stream window join", OPERATOR, [
        "'b' rows until the join clock passes ROWTIME + 10 SECOND", "'a': the last 1 row of the whole input"]),
    "s002_row_based_window_aggregate": (None, LOOKUP, []),  # an aggregate over a ROWS window: no join
    "s003_orders_shipments": ("stream-stream window join", BATCH, ["'s' rows until the join clock passes ROWTIME\n",
                                                                   "'o' rows until the join clock passes ROWTIME + 1 HOUR"]),
    "s004_inner_join": ("stream-table changelog join", OPERATOR, [f"'customerstable': {LATEST}"]),
    "s004_joining_and_grouping": ("stream-table snapshot join", LOOKUP, ["'customerstable', " + SNAPSHOT_HELD]),
    "s004_key_join": ("stream-stream window join", REFUSED, ["'customers' rows until the join clock passes ROWTIME\n"]),
    "s004_key_join_explicit": ("stream-stream window join", REFUSED, ["'orders' rows until the join clock passes ROWTIME\n"]),
    "s004_left_join": ("stream-table changelog join", OPERATOR, [f"'customerstable': {LATEST}"]),
    "s004_more_than_two_sources": ("stream-stream window join", REFUSED, ["the snapshot of 'customerorders', " + SNAPSHOT_HELD]),
    "s004_outer_join": ("stream-stream window join", REFUSED, [
        "'ordersstream' rows until the join clock passes ROWTIME; a row that matched nothing is then emitted NULL-extended",
        "'customersstream' rows until the join clock passes ROWTIME; a row that matched nothing is then emitted NULL-extended"]),
    "s004_right_join": ("stream-table changelog join", REFUSED, [f"'customerstable': {LATEST}"]),
    "s004_table_arrives_later": ("stream-table changelog join", OPERATOR, [f"'customerstable': {LATEST}",
                                                                           "'orders' rows that found no table row: they wait"]),
    "s004_within": ("stream-stream window join", BATCH, [
        "'customers' rows until the join clock passes ROWTIME + 5 SECOND; a row that matched nothing",
        "'orders' rows until the join clock passes ROWTIME + 5 SECOND"]),
}


def test_every_seed_has_hand_written_facts():
    assert set(FACTS) == {p.stem for p in SEEDS}


@pytest.mark.parametrize("name", sorted(FACTS))
def test_a_seeds_explain_names_its_join_engine_state_retention_and_final_emission(name):
    text = explain_text(compile_sql((FIXTURES / "seeds" / f"{name}.sql").read_text(), f"{name}.sql"))
    kind, engine, retention = FACTS[name]
    assert "emit: FINAL" in text and "emit: EAGER" not in text and "emit: CHANGES" not in text
    if kind is not None:
        assert f"[{kind}]" in text.split("join 1:")[1].splitlines()[0], text
    operators = [line.split("operator: ", 1)[1] for line in text.splitlines() if "operator: " in line]
    if engine is None:
        assert not operators, operators  # a lookup against a table, or no join: no join operator
    else:
        assert operators and operators[0].startswith(engine), operators
    for phrase in retention:
        assert phrase in text, (phrase, text)
