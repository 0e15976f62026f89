"""Views whose rows change, read by another query (issue 39's corpus, issue 40): a running aggregate
(GROUP BY without a time bucket, TUMBLE / HOP over a column that is not the rowtime) is a table fed
by its changes, keyed by its groups. Its part writes that changelog; the query that reads it joins
it, groups it or passes it on as it does a Debezium table. Each program runs in three parts with
a restart; the changelog it writes, folded, is the SQL answer over every row it read."""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter, defaultdict

import pytest
from test_regular_joins import TABLES, _run_in_three_parts, debezium_events, fold_by

START = dt.datetime(2026, 11, 27, 10, 0, 0)

# Nexmark q5 as RisingWave runs it (corpus risingwave/14): the lots with the most offers in each
# sliding window, over a source that declares no time (read in arrival order): its HOP windows
# never close, so both sides are running aggregates joined as they change
HOT_LOTS = """
CREATE SOURCE offers (lot INT, amount INT, at TIMESTAMP)
  WITH (connector = 'files', path = '{d}/offers') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW hot_lots AS
SELECT l.lot, l.num, l.starttime
FROM (SELECT lot, COUNT(*) AS num, window_start AS starttime
      FROM HOP(offers, at, INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY lot, window_start) AS l
JOIN (SELECT MAX(c.num) AS maxn, c.starttime_c
      FROM (SELECT COUNT(*) AS num, window_start AS starttime_c
            FROM HOP(offers, at, INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY lot, window_start) AS c
      GROUP BY c.starttime_c) AS m
ON l.starttime = m.starttime_c AND l.num >= m.maxn;
"""


def _stamp(t: dt.datetime) -> str:
    return t.isoformat(sep=" ")


@pytest.mark.long  # a minute: its constructs (a running HOP view grouped; joined) are folded in make test below
def test_the_hot_lots_of_sliding_windows_that_never_close_fold_to_the_sql_answer(spark, tmp_path):
    """Each offer moves its lot's count in three windows, and the window's maximum with it: a lot
    that was hot is withdrawn (-D) when another passes it, as RisingWave's q5 materialized view."""
    rng = random.Random("hot-lots")
    batches, offers = [], []
    for _ in range(3):
        new = [{"lot": rng.choice([1, 2, 3]), "amount": rng.randint(1, 9),
                "at": _stamp(START + dt.timedelta(seconds=rng.randint(0, 9)))} for _ in range(12)]
        offers += new
        batches.append({"offers": new})
    rows, status = _run_in_three_parts(spark, tmp_path, HOT_LOTS.format(d=tmp_path), batches, "risingwave")
    counts: Counter = Counter()
    for o in offers:
        at = dt.datetime.fromisoformat(o["at"])
        last = at - dt.timedelta(seconds=at.second % 2)  # the latest window start at or before it
        for back in range(3):
            counts[(o["lot"], last - dt.timedelta(seconds=2 * back))] += 1
    most = defaultdict(int)
    for (_, start), n in counts.items():
        most[start] = max(most[start], n)
    want = Counter({(lot, n, f"{start:%Y-%m-%d %H:%M:%S}.000"): 1 for (lot, start), n in counts.items() if n >= most[start]})
    assert status["rejected_rows"] == 0, status
    assert status["late_rows"] == 0, status
    assert fold_by(rows, ("lot", "num", "starttime")) == want, rows


PER_CUSTOMER = """
CREATE MATERIALIZED VIEW per_customer AS
  SELECT cust, COUNT(*) AS n, SUM(oid) AS total FROM orders GROUP BY cust;
"""


@pytest.mark.parametrize("join_type", ["LEFT", pytest.param("INNER", marks=pytest.mark.long)])
def test_a_running_aggregate_joined_with_a_table_that_changes_follows_both(spark, tmp_path, join_type):
    """Per-customer counts (a view whose rows change with every order) joined with a CDC table:
    a new order updates its customer's row, a customer's update or delete updates the pair."""
    rng = random.Random(f"counts-joined-{join_type}")
    customers: dict = {}
    batches, orders = [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, 4])} for i in range(5)]
        orders += new_orders
        batches.append({"orders": new_orders,
                        "customers": debezium_events(rng, [1, 2, 3], {"name": ["ann", "bob"], "region": [1, 2]}, 4, customers)})
    sql = TABLES.format(d=tmp_path) + PER_CUSTOMER + f"""
    CREATE MATERIALIZED VIEW named AS
      SELECT p.cust, p.n, p.total, c.name FROM per_customer AS p {join_type} JOIN customers AS c ON p.cust = c.id;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    per = defaultdict(list)
    for o in orders:
        per[o["cust"]].append(o["oid"])
    want = Counter()
    for cust, oids in per.items():
        c = customers.get(cust)
        if c is not None or join_type == "LEFT":
            want[(cust, len(oids), sum(oids), c and c["name"])] += 1
    assert status["rejected_rows"] == 0 and status["late_rows"] == 0, status
    assert fold_by(rows, ("cust", "n", "total", "name")) == want, rows


@pytest.mark.long  # 44 s of make test (30.6 min on 2026-11-29); a GROUP BY over a changelog view's rows runs below
def test_a_count_of_counts_moves_each_key_between_its_groups(spark, tmp_path):
    """A GROUP BY over a running aggregate's view (how many customers have n orders): each order
    moves its customer from group n to n + 1, a -1 in one and a +1 in the other."""
    rng = random.Random("count-of-counts")
    batches, orders = [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, 4, 5])} for i in range(6)]
        orders += new_orders
        batches.append({"orders": new_orders})
    sql = TABLES.format(d=tmp_path) + PER_CUSTOMER + """
    CREATE MATERIALIZED VIEW spread AS SELECT n, COUNT(*) AS customers, MAX(total) AS biggest FROM per_customer GROUP BY n;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    per = defaultdict(list)
    for o in orders:
        per[o["cust"]].append(o["oid"])
    groups = defaultdict(list)
    for oids in per.values():
        groups[len(oids)].append(sum(oids))
    want = Counter({(n, len(totals), max(totals)): 1 for n, totals in groups.items()})
    assert status["rejected_rows"] == 0 and status["late_rows"] == 0, status
    assert fold_by(rows, ("n", "customers", "biggest")) == want, rows


@pytest.mark.long  # two minutes (three parts, HOP rows three times each): make test-long
def test_a_join_of_sliding_windows_that_never_close_pairs_rows_per_window_as_they_come(spark, tmp_path):
    """HOP(taps) JOIN HOP(views) ON ref AND window_end over sources without a watermark (corpus
    risingwave/01): RisingWave joins such windows as a regular join, each row once per window it
    is in; grouped, the counts per banner and window fold to the SQL answer."""
    rng = random.Random("window-pairs")

    def at() -> str:
        return _stamp(START + dt.timedelta(seconds=rng.randint(0, 9)))

    batches, views, taps = [], [], []
    for _ in range(3):
        new_views = [{"ref": rng.randint(1, 6), "banner": rng.choice([1, 2]), "at": at()} for _ in range(6)]
        new_taps = [{"ref": rng.randint(1, 6), "at": at()} for _ in range(6)]
        views, taps = views + new_views, taps + new_taps
        batches.append({"views": new_views, "taps": new_taps})
    sql = f"""
    CREATE SOURCE views (ref INT, banner INT, at TIMESTAMP) WITH (connector = 'files', path = '{tmp_path}/views') FORMAT PLAIN ENCODE JSON;
    CREATE SOURCE taps (ref INT, at TIMESTAMP) WITH (connector = 'files', path = '{tmp_path}/taps') FORMAT PLAIN ENCODE JSON;
    CREATE MATERIALIZED VIEW per_window AS
    SELECT v.banner, v.window_end, COUNT(*) AS n
    FROM HOP(taps, at, INTERVAL '2' SECOND, INTERVAL '6' SECOND) AS t
    JOIN HOP(views, at, INTERVAL '2' SECOND, INTERVAL '6' SECOND) AS v ON v.ref = t.ref AND v.window_end = t.window_end
    GROUP BY v.banner, v.window_end;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")

    def ends(stamp: str) -> set:
        t = dt.datetime.fromisoformat(stamp)
        last = t - dt.timedelta(seconds=t.second % 2)
        return {last - dt.timedelta(seconds=2 * back) + dt.timedelta(seconds=6) for back in range(3)}

    counts: Counter = Counter()
    for t in taps:
        for v in views:
            if v["ref"] == t["ref"]:
                for end in ends(t["at"]) & ends(v["at"]):
                    counts[(v["banner"], f"{end:%Y-%m-%d %H:%M:%S}.000")] += 1
    want = Counter({(banner, end, n): 1 for (banner, end), n in counts.items()})
    assert status["rejected_rows"] == 0 and status["late_rows"] == 0, status
    assert fold_by(rows, ("banner", "window_end", "n")) == want, rows


PAID = """
CREATE MATERIALIZED VIEW paid AS
  SELECT o.oid, c.name, c.region FROM orders AS o LEFT JOIN customers AS c ON o.cust = c.id;
"""


def _orders_and_customers(rng: random.Random, regions: dict | None = None) -> tuple[list[dict], list[dict], dict]:
    customers: dict = {}
    batches, orders = [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, None])} for i in range(4)]
        orders += new_orders
        batch = {"orders": new_orders,
                 "customers": debezium_events(rng, [1, 2, 3], {"name": ["ann", "bob"], "region": [1, 2]}, 4, customers)}
        if regions is not None:
            batch["regions"] = debezium_events(rng, [1, 2], {"label": ["north", "south"]}, 2, regions)
        batches.append(batch)
    return batches, orders, customers


def test_groups_of_a_view_of_an_outer_regular_join_follow_its_rows_as_they_change(spark, tmp_path):
    """RisingWave's materialized view over a materialized view of a LEFT JOIN: an order's NULL-extended
    row is withdrawn when its customer arrives, a customer's update moves its orders' rows; the
    view's rows have no key, so each withdrawal takes out a row equal to it."""
    rng = random.Random("groups-of-paid")
    batches, orders, customers = _orders_and_customers(rng)
    sql = TABLES.format(d=tmp_path) + PAID + """
    CREATE MATERIALIZED VIEW per_name AS SELECT p.name, COUNT(*) AS n, MAX(p.oid) AS last FROM paid AS p GROUP BY p.name;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    groups = defaultdict(list)
    for o in orders:
        c = customers.get(o["cust"])
        groups[c and c["name"]].append(o["oid"])
    want = Counter({(name, len(oids), max(oids)): 1 for name, oids in groups.items()})
    assert status["rejected_rows"] == 0 and status["late_rows"] == 0, status
    assert fold_by(rows, ("name", "n", "last")) == want, rows


@pytest.mark.long  # (its view is folded through a GROUP BY in make test, above)
def test_a_view_of_an_outer_regular_join_joined_with_a_table_that_changes_follows_both(spark, tmp_path):
    rng = random.Random("paid-regions")
    regions: dict = {}
    batches, orders, customers = _orders_and_customers(rng, regions)
    sql = TABLES.format(d=tmp_path) + PAID + """
    CREATE MATERIALIZED VIEW labelled AS
      SELECT p.oid, p.name, r.label FROM paid AS p LEFT JOIN regions AS r ON p.region = r.id;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    want = Counter()
    for o in orders:
        c = customers.get(o["cust"])
        r = regions.get(c["region"]) if c else None
        want[(o["oid"], c and c["name"], r and r["label"])] += 1
    assert status["rejected_rows"] == 0 and status["late_rows"] == 0, status
    assert fold_by(rows, ("oid", "name", "label")) == want, rows
