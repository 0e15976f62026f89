"""The plain-Python reference (tests/reference.py) against hand-computed answers, the seeds'
documented tables and a second, brute-force reading of SEMANTICS.md §4 "Precisely". No Spark."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from reference import JOIN_TYPES, JoinStep, Side, Stream, asof, fold, join_chain, two_way, window_join


def hms(text: str) -> int:
    """'05:03:15' (or '05:03:15.250') as milliseconds since midnight."""
    h, m, s = text.split(":")
    return (int(h) * 3600 + int(m) * 60) * 1000 + round(float(s) * 1000)


def final(rows: list[tuple]) -> Counter:
    assert all(op == "+I" for op, *_ in rows)
    return fold(rows)


def same_key(a: dict, b: dict) -> bool:
    return a["k"] == b["k"]


# --- a second reading of §4 "Precisely": presence ranges of moments, compared pairwise ----------

INF = float("inf")


def presence_ranges(left: Side, right: Side) -> tuple[list, list]:
    """Per input, per row: (start moment, end moment exclusive). A moment is (instant, j): the j-th
    arrival at the instant in event order, (instant, 0) before any arrival, (instant, INF) after all."""
    events = sorted([(r["rowtime"], 0, i) for i, r in enumerate(left.rows)] + [(r["rowtime"], 1, i) for i, r in enumerate(right.rows)])
    arrival: dict[tuple[int, int], tuple[int, int]] = {}
    j = 0
    for pos, (t, side, idx) in enumerate(events):
        j = j + 1 if pos and events[pos - 1][0] == t else 1
        arrival[(side, idx)] = (t, j)
    ranges: tuple[list, list] = ([], [])
    for side, stream in enumerate((left, right)):
        for idx, row in enumerate(stream.rows):
            t = row["rowtime"]
            if stream.window[0] == "range":
                _, size, lag = stream.window
                start = (t + lag, 0) if lag else arrival[(side, idx)]
                end = (t + size, INF)
            else:
                _, n, cols = stream.window
                start = arrival[(side, idx)]
                later = sorted(
                    arrival[(side, o)] for o, other in enumerate(stream.rows)
                    if arrival[(side, o)] > start and all(other[c] == row[c] for c in cols)
                )
                end = later[n] if len(later) > n else (INF, 0)
            ranges[side].append((start, end))
    return ranges


def brute_force(left: Side, right: Side, join_type: str, condition, eager: bool) -> Counter:
    """FINAL (or EAGER) as the multiset of (rowtime, li, ri), from the presence ranges alone."""
    ranges = presence_ranges(left, right)
    out: Counter = Counter()
    match_rowtimes: tuple[dict, dict] = ({}, {})
    for li, (ls, le) in enumerate(ranges[0]):
        for ri, (rs, re_) in enumerate(ranges[1]):
            if max(ls, rs) < min(le, re_) and (join_type == "CROSS" or condition(left.rows[li], right.rows[ri])):
                rowtime = max(ls, rs)[0]
                out[(rowtime, li, ri)] += 1
                match_rowtimes[0].setdefault(li, []).append(rowtime)
                match_rowtimes[1].setdefault(ri, []).append(rowtime)
    preserved = {"LEFT": (0,), "RIGHT": (1,), "FULL": (0, 1)}.get(join_type, ())
    for side in preserved:
        for idx, (start, _) in enumerate(ranges[side]):
            times = match_rowtimes[side].get(idx, [])
            # FINAL: no match at all; EAGER: no match by the end of the row's first instant
            if not times or (eager and min(times) > start[0]):
                out[(start[0], idx, None) if side == 0 else (start[0], None, idx)] += 1
    return out


# --- random inputs ------------------------------------------------------------------------------


def random_window(rng: random.Random) -> tuple:
    if rng.random() < 0.5:
        size = rng.randint(0, 4) * 500
        lag = rng.randint(1, size // 500) * 500 if size and rng.random() < 0.3 else 0
        return ("range", size, lag)
    return ("rows", rng.randint(0, 2), rng.choice([(), ("k",)]))


def random_rows(rng: random.Random) -> list[dict]:
    return [{"k": rng.randint(0, 2), "v": rng.randint(0, 3), "rowtime": rng.randint(0, 8) * 500} for _ in range(rng.randint(0, 7))]


CONDITIONS = [
    same_key,
    lambda a, b: a["k"] == b["k"] and a["v"] < b["v"],
    lambda a, b: a["v"] <= b["v"],
]


def random_case(seed: int, range_only: bool = False):
    rng = random.Random(seed)
    windows = [random_window(rng) for _ in range(2)]
    if range_only:
        windows = [w if w[0] == "range" else ("range", rng.randint(0, 4) * 500, 0) for w in windows]
    left = Side("l", random_rows(rng), windows[0])
    right = Side("r", random_rows(rng), windows[1])
    return left, right, rng.choice(JOIN_TYPES), rng.choice(CONDITIONS)


# --- RANGE: the same as the older join_chain reference ----------------------------------------


def chain_result(left: Side, right: Side, join_type: str, condition) -> Counter:
    first = Stream("l", left.rows, left.window[1], left.window[2])
    second = Stream("r", right.rows, right.window[1], right.window[2])
    step = JoinStep(second, join_type, lambda c: condition(c["l"], c["r"]))

    def index(rows: list[dict], row: dict | None) -> int | None:
        return None if row is None else next(i for i, r in enumerate(rows) if r is row)

    return Counter(
        (start, index(left.rows, combo["l"]), index(right.rows, combo["r"])) for combo, (start, _) in join_chain(first, [step])
    )


def test_range_windows_give_the_same_rows_as_the_join_chain_reference_on_hand_cases():
    left = Side("l", [{"k": 1, "rowtime": 1000}, {"k": 2, "rowtime": 3000}, {"k": 1, "rowtime": 9000}], ("range", 2000, 0))
    right = Side("r", [{"k": 1, "rowtime": 2000}, {"k": 1, "rowtime": 3000}, {"k": 3, "rowtime": 3000}], ("range", 0, 0))
    # left 0 is present over [1000, 3000]: it meets both k=1 rights; left 1 and 2 have no partner
    assert final(two_way(left, right, "LEFT", same_key)) == Counter(
        {(2000, 0, 0): 1, (3000, 0, 1): 1, (3000, 1, None): 1, (9000, 2, None): 1}
    )
    assert final(two_way(left, right, "FULL", same_key)) == Counter(
        {(2000, 0, 0): 1, (3000, 0, 1): 1, (3000, 1, None): 1, (9000, 2, None): 1, (3000, None, 2): 1}
    )
    lagged = Side("l", left.rows, ("range", 3000, 1000))  # present over [t + 1000, t + 3000]
    # left 0 over [2000, 4000] meets right 0 at 2000 and right 1 at 3000; left 1 over [4000, 6000]
    assert final(two_way(lagged, right, "FULL", same_key)) == Counter(
        {(2000, 0, 0): 1, (3000, 0, 1): 1, (4000, 1, None): 1, (10000, 2, None): 1, (3000, None, 2): 1}
    )
    for a, b in [(left, right), (lagged, right), (right, lagged)]:
        for join_type in JOIN_TYPES:
            assert final(two_way(a, b, join_type, same_key)) == chain_result(a, b, join_type, same_key)


@pytest.mark.parametrize("seed", range(150))
def test_range_windows_give_the_same_rows_as_the_join_chain_reference_on_random_inputs(seed):
    left, right, join_type, condition = random_case(seed, range_only=True)
    assert final(two_way(left, right, join_type, condition)) == chain_result(left, right, join_type, condition)


# --- ROWS windows ---------------------------------------------------------------------------


def test_rows_current_row_is_evicted_by_the_next_row_of_its_partition():
    right = Side("r", [{"k": 1, "rowtime": 1500}, {"k": 1, "rowtime": 2500}], ("range", 0, 0))
    left_rows = [{"k": 1, "rowtime": 1000}, {"k": 2, "rowtime": 2000}]
    # without PARTITION BY, left 1 (k=2) evicts left 0 at 2000: right 1 at 2500 finds only left 1
    unpartitioned = Side("l", left_rows, ("rows", 0, ()))
    assert final(two_way(unpartitioned, right, "CROSS", None)) == Counter({(1500, 0, 0): 1, (2500, 1, 1): 1})
    assert final(two_way(unpartitioned, right, "LEFT", same_key)) == Counter({(1500, 0, 0): 1, (2000, 1, None): 1})
    # PARTITION BY k: left 1 is in another partition, so left 0 is still the current row of k=1
    partitioned = Side("l", left_rows, ("rows", 0, ("k",)))
    assert final(two_way(partitioned, right, "LEFT", same_key)) == Counter(
        {(1500, 0, 0): 1, (2500, 0, 1): 1, (2000, 1, None): 1}
    )


def test_rows_current_row_evicted_within_its_own_instant_misses_a_right_row_of_that_instant():
    # left rows come before right rows at one rowtime (§2), so left 0 is gone when right 0 arrives
    left = Side("l", [{"k": 1, "rowtime": 1000}, {"k": 1, "rowtime": 1000}], ("rows", 0, ()))
    right = Side("r", [{"k": 1, "rowtime": 1000}], ("range", 0, 0))
    assert final(two_way(left, right, "LEFT", same_key)) == Counter({(1000, 1, 0): 1, (1000, 0, None): 1})
    # the other way round, the right row is present when both left rows arrive
    assert final(two_way(right, left, "INNER", same_key)) == Counter({(1000, 0, 0): 1, (1000, 0, 1): 1})


def test_rows_one_preceding_with_partition_by_keeps_two_rows_per_partition():
    left = Side(
        "l",
        [{"k": "A", "rowtime": 1000}, {"k": "B", "rowtime": 2000}, {"k": "A", "rowtime": 3000}, {"k": "A", "rowtime": 4000}],
        ("rows", 1, ("k",)),
    )
    right = Side("r", [{"k": "A", "rowtime": 3500}, {"k": "A", "rowtime": 4500}, {"k": "B", "rowtime": 4500}], ("range", 0, 0))
    # at 3500 partition A holds left 0 and 2; left 3 at 4000 evicts left 0; B keeps left 1 throughout
    assert final(two_way(left, right, "INNER", same_key)) == Counter(
        {(3500, 0, 0): 1, (3500, 2, 0): 1, (4500, 2, 1): 1, (4500, 3, 1): 1, (4500, 1, 2): 1}
    )
    assert final(two_way(left, right, "CROSS", None)) == Counter(
        {(3500, 0, 0): 1, (3500, 1, 0): 1, (3500, 2, 0): 1}
        | {(4500, li, ri): 1 for li in (1, 2, 3) for ri in (1, 2)}
    )


def test_rows_window_against_a_lagged_range_window_meets_at_the_lag_start():
    # right 0 arrives at 1000 but is present from (3000, 0): before left 1 arrives at (3000, 1)
    left = Side("l", [{"k": 1, "rowtime": 2000}, {"k": 1, "rowtime": 3000}], ("rows", 0, ()))
    right = Side("r", [{"k": 1, "rowtime": 1000}], ("range", 5000, 2000))
    assert final(two_way(left, right, "FULL", same_key)) == Counter({(3000, 0, 0): 1, (3000, 1, 0): 1})
    assert fold(two_way(left, right, "FULL", same_key, "CHANGES")) == Counter({(3000, 0, 0): 1, (3000, 1, 0): 1})
    # EAGER: left 0 had no partner by the end of 2000, right 0 had one by the end of 3000
    assert final(two_way(left, right, "FULL", same_key, "EAGER")) == Counter({(2000, 0, None): 1, (3000, 0, 0): 1, (3000, 1, 0): 1})


# --- the s-Server example: EAGER vs FINAL ----------------------------------------------------

ORDER_QUANTITY = Side(
    "oq",
    [
        {"rowtime": hms(t), "quantity": q, "ticker": k}
        for t, q, k in [
            ("05:02:10", 750, "IBM"), ("05:03:10", 1000, "IBM"), ("05:03:15", 1000, "GOOGL"), ("05:03:20", 2000, "GOOGL"),
            ("05:03:20", 2000, "IBM"), ("05:03:28", 1000, "MSFT"), ("05:03:30", 2000, "MSFT"),
        ]
    ],
    ("range", 60_000, 0),
)
STOCK_PRICE = Side(
    "sp",
    [
        {"rowtime": hms(t), "price": p, "ticker": k}
        for t, p, k in [("05:02:10", 75, "IBM"), ("05:03:10", 100, "IBM"), ("05:03:15", 100, "MSFT"), ("05:03:20", 100, "GOOGL"), ("05:03:25", 200, "MSFT")]
    ],
    ("range", 60_000, 0),
)


def same_ticker(oq: dict, sp: dict) -> bool:
    return oq["ticker"] == sp["ticker"]


def readable(rows: list[tuple]) -> Counter:
    """(rowtime, quantity, ticker of the order or the price, price) with None for a NULL side."""
    out: Counter = Counter()
    for op, rowtime, li, ri in rows:
        assert op == "+I"
        oq = None if li is None else ORDER_QUANTITY.rows[li]
        sp = None if ri is None else STOCK_PRICE.rows[ri]
        out[(rowtime, oq and oq["quantity"], (oq or sp)["ticker"], sp and sp["price"])] += 1
    return out


S_SERVER_MATCHES = Counter(
    [
        (hms("05:02:10"), 750, "IBM", 75),
        (hms("05:03:10"), 1000, "IBM", 75),
        (hms("05:03:10"), 750, "IBM", 100),
        (hms("05:03:10"), 1000, "IBM", 100),
        (hms("05:03:20"), 1000, "GOOGL", 100),
        (hms("05:03:20"), 2000, "GOOGL", 100),
        (hms("05:03:20"), 2000, "IBM", 100),
        (hms("05:03:28"), 1000, "MSFT", 100),
        (hms("05:03:28"), 1000, "MSFT", 200),
        (hms("05:03:30"), 2000, "MSFT", 100),
        (hms("05:03:30"), 2000, "MSFT", 200),
    ]
)


def test_s_server_left_join_eager_shows_googl_null_extended_first_and_final_only_matched():
    eager = two_way(ORDER_QUANTITY, STOCK_PRICE, "LEFT", same_ticker, "EAGER")
    assert readable(eager) == S_SERVER_MATCHES + Counter([(hms("05:03:15"), 1000, "GOOGL", None)])
    # the NULL row comes out before the match that follows it at 05:03:20
    googl = [(rowtime, ri) for _, rowtime, li, ri in eager if li == 2]
    assert googl == [(hms("05:03:15"), None), (hms("05:03:20"), 3)]
    final_rows = two_way(ORDER_QUANTITY, STOCK_PRICE, "LEFT", same_ticker)
    assert readable(final_rows) == S_SERVER_MATCHES
    assert [r[1] for r in final_rows] == sorted(r[1] for r in final_rows)


def test_s_server_full_join_eager_up_to_the_clock_is_the_seed_table():
    eager = readable(two_way(ORDER_QUANTITY, STOCK_PRICE, "FULL", same_ticker, "EAGER"))
    # the seed prints the rows up to the stream clock 05:03:20
    assert Counter({row: n for row, n in eager.items() if row[0] <= hms("05:03:20")}) == Counter(
        [row for row in S_SERVER_MATCHES if row[0] <= hms("05:03:20")]
        + [(hms("05:03:15"), 1000, "GOOGL", None), (hms("05:03:15"), None, "MSFT", 100)]
    )
    # later, the MSFT 200 price is NULL-extended at 05:03:25 and matched at 05:03:28
    assert eager[(hms("05:03:25"), None, "MSFT", 200)] == 1


def test_s_server_left_join_changes_withdraws_the_googl_null_row_when_its_match_arrives():
    changes = two_way(ORDER_QUANTITY, STOCK_PRICE, "LEFT", same_ticker, "CHANGES")
    googl = [(op, rowtime, ri) for op, rowtime, li, ri in changes if li == 2]
    assert googl == [("+I", hms("05:03:15"), None), ("-D", hms("05:03:15"), None), ("+I", hms("05:03:20"), 3)]
    assert fold(changes) == final(two_way(ORDER_QUANTITY, STOCK_PRICE, "LEFT", same_ticker))


# --- every window kind and join type, random inputs -----------------------------------------


@pytest.mark.parametrize("seed", range(200))
def test_final_eager_and_changes_agree_with_the_presence_ranges_on_random_inputs(seed):
    left, right, join_type, condition = random_case(seed)
    final_rows = two_way(left, right, join_type, condition, "FINAL")
    eager = two_way(left, right, join_type, condition, "EAGER")
    changes = two_way(left, right, join_type, condition, "CHANGES")
    assert final(final_rows) == brute_force(left, right, join_type, condition, eager=False)
    assert final(eager) == brute_force(left, right, join_type, condition, eager=True)
    assert [r[1] for r in final_rows] == sorted(r[1] for r in final_rows)
    # CHANGES folds to FINAL; its insertions are EAGER's rows; it withdraws only NULL-extended rows
    assert fold(changes) == final(final_rows)
    assert fold([c for c in changes if c[0] == "+I"]) == final(eager)
    assert all(None in c[2:] for c in changes if c[0] == "-D")
    # EAGER is FINAL plus NULL-extended rows
    assert not final(final_rows) - final(eager)
    assert all(None in key[1:] for key in final(eager) - final(final_rows))


def test_cross_join_ignores_the_condition_and_never_adds_null_rows():
    left = Side("l", [{"rowtime": 0}, {"rowtime": 5000}], ("range", 1000, 0))
    right = Side("r", [{"rowtime": 1000}], ("range", 0, 0))
    for emit in ("FINAL", "EAGER", "CHANGES"):
        assert two_way(left, right, "CROSS", lambda a, b: False, emit) == [("+I", 1000, 0, 0)]


def test_fold_rejects_a_withdrawal_of_a_row_that_is_not_there():
    with pytest.raises(AssertionError):
        fold([("+I", 1, 0, None), ("-D", 1, 0, None), ("-D", 1, 0, None)])


# --- ASOF (§8) ---------------------------------------------------------------------------------

STOCK_PRICES = Side(
    "sp",
    [
        {"stock_name": name, "rowtime": hms(t), "price": price}
        for name, t, price in [
            ("TSLA", "09:30:00", 250), ("TSLA", "10:30:00", 252), ("TSLA", "11:30:00", 255),
            ("AMZN", "09:30:00", 3300), ("AMZN", "10:30:00", 3310), ("AMZN", "11:30:00", 3320),
            ("GOOG", "09:30:00", 1400), ("GOOG", "10:30:00", 1410), ("GOOG", "11:30:00", 1420),
        ]
    ],
    ("range", 0, 0),
)
MARKET_DATA = Side(
    "md",
    [
        {"stock_name": name, "rowtime": hms(t), "sentiment": s}
        for name, t, s in [
            ("TSLA", "09:00:00", 0.7), ("TSLA", "10:00:00", 0.8), ("TSLA", "11:00:00", 0.9),
            ("AMZN", "09:00:00", 0.6), ("AMZN", "10:00:00", 0.65), ("AMZN", "11:00:00", 0.7),
            ("NVDA", "09:00:00", 0.55), ("NVDA", "10:00:00", 0.6), ("NVDA", "11:00:00", 0.65),
        ]
    ],
    ("range", 0, 0),
)
# all on 2024-09-24; the date is left out of the rowtimes


def same_stock(sp: dict, md: dict) -> bool:
    return sp["stock_name"] == md["stock_name"]


def sentiments(rows: list[tuple]) -> Counter:
    out: Counter = Counter()
    for op, rowtime, li, ri in rows:
        assert op == "+I"
        sp = STOCK_PRICES.rows[li]
        assert rowtime == sp["rowtime"]  # market data is always earlier here
        out[(sp["stock_name"], sp["rowtime"], sp["price"], None if ri is None else MARKET_DATA.rows[ri]["sentiment"])] += 1
    return out


RISINGWAVE_ASOF = Counter(
    [
        ("TSLA", hms("09:30:00"), 250, 0.7), ("TSLA", hms("10:30:00"), 252, 0.8), ("TSLA", hms("11:30:00"), 255, 0.9),
        ("AMZN", hms("09:30:00"), 3300, 0.6), ("AMZN", hms("10:30:00"), 3310, 0.65), ("AMZN", hms("11:30:00"), 3320, 0.7),
    ]
)


def test_asof_join_gives_risingwaves_stock_example():
    assert sentiments(asof(STOCK_PRICES, MARKET_DATA, same_stock, "<=", outer=False)) == RISINGWAVE_ASOF


def test_asof_left_join_gives_risingwaves_stock_example_with_goog_null_extended():
    assert sentiments(asof(STOCK_PRICES, MARKET_DATA, same_stock, "<=", outer=True)) == RISINGWAVE_ASOF + Counter(
        [("GOOG", hms("09:30:00"), 1400, None), ("GOOG", hms("10:30:00"), 1410, None), ("GOOG", hms("11:30:00"), 1420, None)]
    )


def test_asof_ties_go_to_the_latest_arrival_and_strict_operators_skip_equal_rowtimes():
    left = Side("l", [{"k": 1, "rowtime": 2000}], ("range", 0, 0))
    right = Side("r", [{"k": 1, "rowtime": 1000}, {"k": 1, "rowtime": 2000}, {"k": 1, "rowtime": 2000}, {"k": 1, "rowtime": 3000}], ("range", 0, 0))
    assert asof(left, right, same_key, "<=", outer=False) == [("+I", 2000, 0, 2)]
    assert asof(left, right, same_key, "<", outer=False) == [("+I", 2000, 0, 0)]
    assert asof(left, right, same_key, ">=", outer=False) == [("+I", 2000, 0, 2)]
    assert asof(left, right, same_key, ">", outer=False) == [("+I", 3000, 0, 3)]


def test_asof_greater_or_equal_waits_for_the_first_candidate():
    left = Side("l", [{"k": 1, "rowtime": 1000}, {"k": 2, "rowtime": 1500}], ("range", 0, 0))
    right = Side("r", [{"k": 1, "rowtime": 4000}, {"k": 1, "rowtime": 6000}], ("range", 0, 0))
    assert asof(left, right, same_key, ">=", outer=False) == [("+I", 4000, 0, 0)]
    assert asof(left, right, same_key, ">=", outer=True) == [("+I", 1500, 1, None), ("+I", 4000, 0, 0)]
    # inner CHANGES: nothing until the candidate at 4000, then the nearest one, never changed
    assert asof(left, right, same_key, ">=", outer=False, emit="CHANGES") == [("+I", 4000, 0, 0)]
    # LEFT CHANGES: NULL-extended at arrival, replaced when the first candidate arrives
    assert asof(left, right, same_key, ">=", outer=True, emit="CHANGES") == [
        ("+I", 1000, 0, None), ("+I", 1500, 1, None), ("-D", 1000, 0, None), ("+I", 4000, 0, 0)
    ]


def test_asof_less_or_equal_changes_follow_each_nearer_candidate():
    left = Side("l", [{"k": 1, "rowtime": 3000}], ("range", 0, 0))
    right = Side("r", [{"k": 1, "rowtime": 1000}, {"k": 1, "rowtime": 3000}, {"k": 1, "rowtime": 3000}], ("range", 0, 0))
    assert asof(left, right, same_key, "<=", outer=True, emit="CHANGES") == [
        ("+I", 3000, 0, 0),  # right 0 arrived before the left row
        ("-D", 3000, 0, 0), ("+I", 3000, 0, 1),
        ("-D", 3000, 0, 1), ("+I", 3000, 0, 2),  # a tie: the latest arrival wins
    ]


@pytest.mark.parametrize("seed", range(100))
@pytest.mark.parametrize("op", ["<=", "<", ">=", ">"])
def test_asof_changes_fold_to_final_on_random_inputs(seed, op):
    rng = random.Random(seed)
    left = Side("l", random_rows(rng), ("range", 0, 0))
    right = Side("r", random_rows(rng), ("range", 0, 0))
    for outer in (False, True):
        final_rows = asof(left, right, same_key, op, outer)
        assert fold(asof(left, right, same_key, op, outer, emit="CHANGES")) == final(final_rows)
        assert len(final_rows) == (len(left.rows) if outer else len({r[2] for r in final_rows}))


# --- TUMBLE / HOP window joins (§8) -----------------------------------------------------------


def test_tumble_window_join_pairs_rows_of_the_same_window_only():
    left = Side("l", [{"k": 1, "rowtime": 1000}, {"k": 1, "rowtime": 9000}, {"k": 2, "rowtime": 12000}], ("range", 0, 0))
    right = Side("r", [{"k": 1, "rowtime": 4000}, {"k": 1, "rowtime": 11000}], ("range", 0, 0))
    # windows of 10 s: [0, 10000) holds left 0, 1 and right 0; [10000, 20000) left 2 and right 1
    assert window_join(left, right, "TUMBLE", 10000, 10000, "INNER", same_key) == [
        ("+I", 4000, 0, 0, 0), ("+I", 9000, 1, 0, 0)
    ]
    assert Counter(window_join(left, right, "TUMBLE", 10000, 10000, "FULL", same_key)) == Counter(
        [("+I", 4000, 0, 0, 0), ("+I", 9000, 1, 0, 0), ("+I", 12000, 2, None, 10000), ("+I", 11000, None, 1, 10000)]
    )


def test_hop_window_join_pairs_rows_once_per_shared_window():
    left = Side("l", [{"k": 1, "rowtime": 4000}], ("range", 0, 0))
    right = Side("r", [{"k": 1, "rowtime": 6000}, {"k": 1, "rowtime": 11000}], ("range", 0, 0))
    # size 10 s, slide 5 s: 4000 is in [-5000, 5000) and [0, 10000); 6000 in [0, 10000) and
    # [5000, 15000); 11000 in [5000, 15000) and [10000, 20000)
    assert window_join(left, right, "HOP", 10000, 5000, "INNER", same_key) == [("+I", 6000, 0, 0, 0)]
    assert Counter(window_join(left, right, "HOP", 10000, 5000, "LEFT", same_key)) == Counter(
        [("+I", 4000, 0, None, -5000), ("+I", 6000, 0, 0, 0)]
    )
    assert Counter(window_join(left, right, "HOP", 10000, 5000, "RIGHT", same_key)) == Counter(
        [("+I", 6000, 0, 0, 0), ("+I", 6000, None, 0, 5000), ("+I", 11000, None, 1, 5000), ("+I", 11000, None, 1, 10000)]
    )
