"""The seeds' examples, run to the end of input (`--until-idle`) in the test session: the
stream-stream examples, then those that need streamjoin's own operator (ROWS windows, EMIT EAGER,
ASOF).

Where a seed contradicts itself or SEMANTICS.md, the expected rows are SEMANTICS.md's, and a
comment says why.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import reference as ref
from reference import Stream, results
from runtime_helpers import run_until_idle, write_jsonl


def run_sql(spark, tmp_path: Path, sql: str, inputs: dict[str, list[dict]]) -> tuple[list[dict], dict]:
    """The query run `--until-idle` in the test session (the CLI's own path is tested in test_cli and
    test_run_inputs_and_contract; a process per example cost 15 s each): its rows in output order
    and its final status."""
    for name, rows in inputs.items():
        write_jsonl(tmp_path / name / "rows.json", rows)
    return run_until_idle(spark, sql.replace("$DIR", str(tmp_path)), tmp_path / "run")


def in_rowtime_order(rows: list[dict]) -> bool:
    return [r["rowtime"] for r in rows] == sorted(r["rowtime"] for r in rows)


def canonical(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r.values()) for r in rows)


T = "2019-03-30 "
ORDER_QUANTITY = [
    {"rowtime": T + "05:02:10.000", "quantity": 750, "ticker": "IBM"},
    {"rowtime": T + "05:03:10.000", "quantity": 1000, "ticker": "IBM"},
    {"rowtime": T + "05:03:15.000", "quantity": 1000, "ticker": "GOOGL"},
    {"rowtime": T + "05:03:20.000", "quantity": 2000, "ticker": "GOOGL"},
    {"rowtime": T + "05:03:20.000", "quantity": 2000, "ticker": "IBM"},
    {"rowtime": T + "05:03:28.000", "quantity": 1000, "ticker": "MSFT"},
    {"rowtime": T + "05:03:30.000", "quantity": 2000, "ticker": "MSFT"},
]
STOCK_PRICE = [
    {"rowtime": T + "05:02:10.000", "ending_price": 75, "ticker": "IBM"},
    {"rowtime": T + "05:03:10.000", "ending_price": 100, "ticker": "IBM"},
    {"rowtime": T + "05:03:15.000", "ending_price": 100, "ticker": "MSFT"},
    {"rowtime": T + "05:03:20.000", "ending_price": 100, "ticker": "GOOGL"},
    {"rowtime": T + "05:03:25.000", "ending_price": 200, "ticker": "MSFT"},
]
STOCKS_DDL = """CREATE STREAM stocks.order_quantity (quantity INTEGER, ticker VARCHAR(8))
  WITH (connector = 'files', format = 'json', path = '$DIR/oq');
CREATE STREAM stocks.stock_price (ending_price INTEGER, ticker VARCHAR(8))
  WITH (connector = 'files', format = 'json', path = '$DIR/sp');
"""


def test_s_server_inner_join_gives_the_documented_rows(spark, tmp_path):
    # The seed's stock_price also gets the row it INSERTs later (05:03:30 IBM 200).
    prices = [*STOCK_PRICE, {"rowtime": T + "05:03:30.000", "ending_price": 200, "ticker": "IBM"}]
    rows, _ = run_sql(
        spark,
        tmp_path,
        STOCKS_DDL
        + """SELECT STREAM rowtime, sp.ticker, oq.quantity, sp.ending_price
  FROM stocks.order_quantity OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS oq
  JOIN stocks.stock_price OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS sp ON (oq.ticker = sp.ticker);""",
        {"oq": ORDER_QUANTITY, "sp": prices},
    )
    assert in_rowtime_order(rows)
    assert canonical(rows) == sorted(
        [
            (T + "05:02:10.000", "IBM", 750, 75),
            (T + "05:03:10.000", "IBM", 1000, 75),
            (T + "05:03:10.000", "IBM", 750, 100),
            (T + "05:03:10.000", "IBM", 1000, 100),
            (T + "05:03:20.000", "GOOGL", 1000, 100),
            (T + "05:03:20.000", "GOOGL", 2000, 100),
            (T + "05:03:20.000", "IBM", 2000, 100),
            # The seed prints 05:03:25 for the two MSFT 1000 rows, but the order row is at 05:03:28
            # and its own text says the output rowtime is the later of the two rowtimes (§4).
            (T + "05:03:28.000", "MSFT", 1000, 100),
            (T + "05:03:28.000", "MSFT", 1000, 200),
            (T + "05:03:30.000", "MSFT", 2000, 100),
            (T + "05:03:30.000", "MSFT", 2000, 200),
            (T + "05:03:30.000", "IBM", 1000, 200),
            (T + "05:03:30.000", "IBM", 2000, 200),
        ]
    )


def test_s_server_cross_join_pairs_every_co_present_row(spark, tmp_path):
    # The seed's CROSS table contradicts itself (it promises 7 x 5 rows, lists 23, with prices no
    # input has); SEMANTICS §5: every co-present pair, i.e. rowtimes at most a minute apart.
    rows, _ = run_sql(
        spark,
        tmp_path,
        STOCKS_DDL
        + """SELECT STREAM rowtime, sp.ticker, oq.quantity, sp.ending_price
  FROM stocks.order_quantity OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS oq
  CROSS JOIN stocks.stock_price OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS sp;""",
        {"oq": ORDER_QUANTITY, "sp": STOCK_PRICE},
    )
    assert in_rowtime_order(rows)
    # 7 x 5 pairs, less those more than a minute apart: order 05:02:10 with the 3 prices after
    # 05:03:10, and price 05:02:10 with the 5 orders after 05:03:10
    assert len(rows) == 7 * 5 - 3 - 5
    stamp = lambda s: int(s[-12:-10]) * 3600000 + int(s[-9:-7]) * 60000 + round(float(s[-6:]) * 1000)  # noqa: E731
    oq = Stream("oq", [{**r, "rowtime": stamp(r["rowtime"])} for r in ORDER_QUANTITY], 60_000)
    sp = Stream("sp", [{**r, "rowtime": stamp(r["rowtime"])} for r in STOCK_PRICE], 60_000)
    from reference import JoinStep

    want = results(oq, [JoinStep(sp, "CROSS", lambda c: True)], lambda c: (c["sp"]["ticker"], c["oq"]["quantity"], c["sp"]["ending_price"]))
    got = {}
    for r in rows:
        key = (stamp(r["rowtime"]), r["ticker"], r["quantity"], r["ending_price"])
        got[key] = got.get(key, 0) + 1
    assert got == dict(want)


def test_kinesis_orders_and_shipments_give_the_documented_rows(spark, tmp_path):
    d = "2024-01-01 "
    orders = [(d + "10:00:00", 100), (d + "10:10:00", 101), (d + "10:20:00", 102), (d + "10:25:00", 103), (d + "10:40:00", 104)]
    shipments = [(d + "10:30:00", 101), (d + "10:45:00", 100), (d + "10:55:00", 103), (d + "11:05:00", 103), (d + "11:30:00", 104)]
    rows, _ = run_sql(
        spark,
        tmp_path,
        """CREATE STREAM Orders (orderId INTEGER) WITH (connector = 'files', format = 'json', path = '$DIR/orders');
CREATE STREAM Shipments (orderId INTEGER) WITH (connector = 'files', format = 'json', path = '$DIR/shipments');
SELECT STREAM ROWTIME, o.orderId, o.ROWTIME AS orderTime FROM Shipments AS s
  JOIN Orders OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o.orderId = s.orderId;""",
        {
            "orders": [{"rowtime": t, "orderId": i} for t, i in orders],
            "shipments": [{"rowtime": t, "orderId": i} for t, i in shipments],
        },
    )
    assert [tuple(r.values()) for r in rows] == [
        (d + "10:30:00.000", 101, d + "10:10:00.000"),
        (d + "10:45:00.000", 100, d + "10:00:00.000"),
        (d + "10:55:00.000", 103, d + "10:25:00.000"),
        (d + "11:05:00.000", 103, d + "10:25:00.000"),
        (d + "11:30:00.000", 104, d + "10:40:00.000"),
    ]


def test_sqlstream_login_failures_join_debit_transactions_of_the_last_minute(spark, tmp_path):
    d = "2024-01-01 "
    failures = [
        {"rowtime": d + "09:00:30", "accountNumber": 1, "loginFailureCount": 3},
        {"rowtime": d + "09:05:00", "accountNumber": 2, "loginFailureCount": 5},
    ]
    transactions = [
        {"rowtime": d + "08:59:45", "accountNumber": 1, "transactionType": "isDebit", "amount": 10.5},
        {"rowtime": d + "09:00:10", "accountNumber": 1, "transactionType": "isCredit", "amount": 99},
        {"rowtime": d + "09:00:30", "accountNumber": 1, "transactionType": "isDebit", "amount": 20},
        {"rowtime": d + "09:00:31", "accountNumber": 1, "transactionType": "isDebit", "amount": 30},  # after the failure
        {"rowtime": d + "09:03:00", "accountNumber": 2, "transactionType": "isDebit", "amount": 40},  # two minutes before
    ]
    rows, _ = run_sql(
        spark,
        tmp_path,
        """CREATE STREAM "SuspectLoginFailures" ("accountNumber" INTEGER, "loginFailureCount" INTEGER)
  WITH (connector = 'files', format = 'json', path = '$DIR/failures');
CREATE STREAM "Transactions" ("accountNumber" INTEGER, "transactionType" VARCHAR(16), "amount" DECIMAL(12, 2))
  WITH (connector = 'files', format = 'json', path = '$DIR/transactions');
SELECT STREAM LF."accountNumber", "loginFailureCount", "transactionType", "amount"
 FROM "SuspectLoginFailures" AS LF
 JOIN "Transactions" AS TX OVER (RANGE INTERVAL '1' MINUTE PRECEDING)
   ON LF."accountNumber" = TX."accountNumber"
WHERE ("transactionType" = 'isDebit');""",
        {"failures": failures, "transactions": transactions},
    )
    assert canonical(rows) == [(1, 3, "isDebit", 10.5), (1, 3, "isDebit", 20)]


def test_lenses_within_keeps_customers_and_matches_within_five_seconds(spark, tmp_path):
    d = "2024-01-01 00:00:"
    rows, _ = run_sql(
        spark,
        tmp_path,
        """CREATE STREAM customers (id INTEGER, name VARCHAR) WITH (connector = 'files', format = 'json', path = '$DIR/customers');
CREATE STREAM orders (item VARCHAR, customer_id INTEGER) WITH (connector = 'files', format = 'json', path = '$DIR/orders');
SELECT STREAM customers.name, orders.item
FROM customers LEFT JOIN orders WITHIN 5s ON customers.id = orders.customer_id WITHIN 5s;""",
        {
            "customers": [{"rowtime": d + "06", "id": 1, "name": "Frank"}, {"rowtime": d + "20", "id": 2, "name": "John"}],
            "orders": [{"rowtime": d + "10", "item": "Computer", "customer_id": 1}, {"rowtime": d + "11", "item": "Keyboard", "customer_id": 2}],
        },
    )
    # The seed shows (Frank, Computer) and (null, Keyboard): a RIGHT join's answer. Its query is
    # customers LEFT JOIN orders, which keeps John (no order within 5 s of 20 s) and drops the
    # unmatched Keyboard (SEMANTICS §5).
    assert [tuple(r.values()) for r in rows] == [("Frank", "Computer"), ("John", None)]


# --------------------------------------------------------------- examples that need our operator

EAGER_SEED_CLOCK = T + "05:03:20.000"


def stocks_reference(join_type: str, emit: str, lwin=("range", 60_000, 0), rwin=("range", 60_000, 0)) -> list[tuple]:
    """(rowtime, sp.ticker, oq.quantity, sp.ending_price) by the plain-Python reference."""
    def ms(text):
        return int(dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").timestamp() * 1000)

    left = [{**r, "rowtime": ms(r["rowtime"])} for r in ORDER_QUANTITY]
    right = [{**r, "rowtime": ms(r["rowtime"])} for r in STOCK_PRICE]
    out = ref.two_way(ref.Side("oq", left, lwin), ref.Side("sp", right, rwin), join_type,
                      lambda a, b: a["ticker"] == b["ticker"], emit)
    rows = []
    for _, t, li, ri in out:
        stamp = dt.datetime.fromtimestamp(t / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        sp = STOCK_PRICE[ri] if ri is not None else {}
        oq = ORDER_QUANTITY[li] if li is not None else {}
        rows.append((stamp, sp.get("ticker"), oq.get("quantity"), sp.get("ending_price")))
    return sorted(rows, key=repr)


def stocks_query(join: str, emit: str = "") -> str:
    return STOCKS_DDL + f"""SELECT STREAM rowtime, sp.ticker, oq.quantity, sp.ending_price
  FROM stocks.order_quantity OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS oq
  {join} stocks.stock_price OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS sp ON (oq.ticker = sp.ticker) {emit};"""


IBM_AND_GOOGL = [
    (T + "05:02:10.000", "IBM", 750, 75),
    (T + "05:03:10.000", "IBM", 1000, 75),
    (T + "05:03:10.000", "IBM", 750, 100),
    (T + "05:03:10.000", "IBM", 1000, 100),
    (T + "05:03:20.000", "GOOGL", 1000, 100),
    (T + "05:03:20.000", "GOOGL", 2000, 100),
    (T + "05:03:20.000", "IBM", 2000, 100),
]


def until_seed_clock(rows: list[dict]) -> list[tuple]:
    """The seed's tables show what was emitted while the join clock stood at 05:03:20."""
    return sorted((tuple(r.values()) for r in rows if r["rowtime"] <= EAGER_SEED_CLOCK), key=repr)


def test_s_server_left_join_in_eager_mode_gives_the_documented_table(spark, tmp_path):
    rows, _ = run_sql(spark, tmp_path, stocks_query("LEFT JOIN", "EMIT EAGER"), {"oq": ORDER_QUANTITY, "sp": STOCK_PRICE})
    # GOOGL 1000 (05:03:15) appears NULL-extended at 05:03:15 and, not withdrawn, matched at 05:03:20
    assert until_seed_clock(rows) == sorted([*IBM_AND_GOOGL, (T + "05:03:15.000", None, 1000, None)], key=repr)
    assert sorted((tuple(r.values()) for r in rows), key=repr) == stocks_reference("LEFT", "EAGER")


def test_s_server_right_join_in_eager_mode_gives_the_documented_table(spark, tmp_path):
    # The seed's RIGHT query selects oq.ticker, sp.quantity and oq.ending_price, columns its
    # streams do not have (quantity is order_quantity's, ending_price stock_price's); its table
    # shows sp.ticker, oq.quantity, sp.ending_price, which is what this test selects.
    rows, _ = run_sql(spark, tmp_path, stocks_query("RIGHT JOIN", "EMIT EAGER"), {"oq": ORDER_QUANTITY, "sp": STOCK_PRICE})
    assert until_seed_clock(rows) == sorted([*IBM_AND_GOOGL, (T + "05:03:15.000", "MSFT", None, 100)], key=repr)
    assert sorted((tuple(r.values()) for r in rows), key=repr) == stocks_reference("RIGHT", "EAGER")
    # after the seed's table: MSFT 100 is matched at 05:03:28 too, and its NULL row stays (EAGER)
    assert (T + "05:03:28.000", "MSFT", 1000, 100) in [tuple(r.values()) for r in rows]


def test_s_server_full_join_in_eager_mode_gives_the_documented_table(spark, tmp_path):
    rows, _ = run_sql(spark, tmp_path, stocks_query("FULL JOIN", "EMIT EAGER"), {"oq": ORDER_QUANTITY, "sp": STOCK_PRICE})
    expected = [*IBM_AND_GOOGL, (T + "05:03:15.000", None, 1000, None), (T + "05:03:15.000", "MSFT", None, 100)]
    assert until_seed_clock(rows) == sorted(expected, key=repr)
    assert sorted((tuple(r.values()) for r in rows), key=repr) == stocks_reference("FULL", "EAGER")


def test_s_server_left_join_in_final_mode_never_emits_a_null_row_that_later_matched(spark, tmp_path):
    rows, _ = run_sql(spark, tmp_path, stocks_query("LEFT JOIN"), {"oq": ORDER_QUANTITY, "sp": STOCK_PRICE})
    assert in_rowtime_order(rows)
    assert (T + "05:03:15.000", None, 1000, None) not in [tuple(r.values()) for r in rows]
    assert sorted((tuple(r.values()) for r in rows), key=repr) == stocks_reference("LEFT", "FINAL")


def test_s_server_left_join_in_changes_mode_withdraws_the_eager_null_row(spark, tmp_path):
    rows, _ = run_sql(spark, tmp_path, stocks_query("LEFT JOIN", "EMIT CHANGES"), {"oq": ORDER_QUANTITY, "sp": STOCK_PRICE})
    assert {"op": "+I", "rowtime": T + "05:03:15.000", "ticker": None, "quantity": 1000, "ending_price": None} in rows
    assert {"op": "-D", "rowtime": T + "05:03:15.000", "ticker": None, "quantity": 1000, "ending_price": None} in rows
    folded = ref.fold([(r["op"], *list(r.values())[1:]) for r in rows])
    assert sorted(folded.elements(), key=repr) == stocks_reference("LEFT", "FINAL")


def test_s_server_example_with_rows_joins_the_last_six_rows_of_each_stream(spark, tmp_path):
    sql = STOCKS_DDL + """SELECT STREAM rowtime, sp.ticker, oq.quantity, sp.ending_price
  FROM stocks.order_quantity OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS oq
  JOIN stocks.stock_price OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS sp
  ON (oq.ticker = sp.ticker);"""
    rows, _ = run_sql(spark, tmp_path, sql, {"oq": ORDER_QUANTITY, "sp": STOCK_PRICE})
    assert in_rowtime_order(rows)
    # The seed prints no result. With 7 and 5 rows, every row stays among the last six of its
    # stream until the 7th order (05:03:30) evicts IBM 750 (05:02:10): each same-ticker pair
    # matches once, at the later rowtime, and IBM 750 has met every IBM price before that.
    assert canonical(rows) == sorted(
        [
            (T + "05:02:10.000", "IBM", 750, 75),
            (T + "05:03:10.000", "IBM", 1000, 75),
            (T + "05:03:10.000", "IBM", 750, 100),
            (T + "05:03:10.000", "IBM", 1000, 100),
            (T + "05:03:20.000", "GOOGL", 1000, 100),
            (T + "05:03:20.000", "GOOGL", 2000, 100),
            (T + "05:03:20.000", "IBM", 2000, 75),
            (T + "05:03:20.000", "IBM", 2000, 100),
            (T + "05:03:28.000", "MSFT", 1000, 100),
            (T + "05:03:28.000", "MSFT", 1000, 200),
            (T + "05:03:30.000", "MSFT", 2000, 100),
            (T + "05:03:30.000", "MSFT", 2000, 200),
        ]
    )
    rows6 = ("rows", 5, ())
    assert sorted(canonical(rows), key=repr) == stocks_reference("INNER", "FINAL", rows6, rows6)


BIDS_ASKS_DDL = """CREATE STREAM SALES.BIDS ("ticker" VARCHAR(8), "shares" INTEGER, "price" INTEGER)
  WITH (connector = 'files', format = 'json', path = '$DIR/bids');
CREATE STREAM SALES.ASKS ("ticker" VARCHAR(8), "shares" INTEGER, "price" INTEGER)
  WITH (connector = 'files', format = 'json', path = '$DIR/asks');
"""
D = "2024-05-01 "


def test_sqlstream_bids_and_asks_match_only_the_current_ask(spark, tmp_path):
    bids = [
        {"rowtime": D + "10:00:00.000", "ticker": "IBM", "shares": 100, "price": 50},
        {"rowtime": D + "10:00:05.000", "ticker": "IBM", "shares": 200, "price": 51},
        {"rowtime": D + "10:00:06.000", "ticker": "IBM", "shares": 100, "price": 50},
    ]
    asks = [
        {"rowtime": D + "10:00:03.000", "ticker": "IBM", "shares": 100, "price": 50},
        {"rowtime": D + "10:00:04.000", "ticker": "IBM", "shares": 200, "price": 51},
        {"rowtime": D + "10:00:20.000", "ticker": "IBM", "shares": 100, "price": 50},
    ]
    sql = BIDS_ASKS_DDL + """SELECT STREAM
 B.ROWTIME AS "bidTime", A.ROWTIME AS "askTime", B."ticker",
 B."shares" AS "bidShares", B."price" AS "bidPrice", A."shares" AS "askShares", A."price" AS "askPrice"
FROM SALES.BIDS OVER "lastTenSeconds" AS B
JOIN SALES.ASKS OVER (ROWS CURRENT ROW) AS A ON A."ticker" = B."ticker"
 AND A."shares" = B."shares"
 AND A."price" = B."price"
WINDOW "lastTenSeconds" AS (RANGE INTERVAL '10' SECOND PRECEDING);"""
    rows, _ = run_sql(spark, tmp_path, sql, {"bids": bids, "asks": asks})
    # ask 10:00:03 meets bid 10:00:00 (within its ten seconds); ask 10:00:04 replaces it as the
    # current row and meets bid 10:00:05; bid 10:00:06 (100 @ 50) finds only the 10:00:04 ask;
    # ask 10:00:20 comes after bid 10:00:00 left its window.
    assert rows == [
        {"bidTime": D + "10:00:00.000", "askTime": D + "10:00:03.000", "ticker": "IBM",
         "bidShares": 100, "bidPrice": 50, "askShares": 100, "askPrice": 50},
        {"bidTime": D + "10:00:05.000", "askTime": D + "10:00:04.000", "ticker": "IBM",
         "bidShares": 200, "bidPrice": 51, "askShares": 200, "askPrice": 51},
    ]


# RisingWave inserts the example's rows stock by stock, so they arrive out of rowtime order: a
# lateness of the two hours they span keeps every one on time (SEMANTICS §1)
RW_DDL = """CREATE STREAM stock_prices (stock_name VARCHAR, stock_time TIMESTAMP, price DOUBLE)
  WITH (connector = 'files', format = 'json', path = '$DIR/sp', rowtime = 'stock_time', lateness = '2 HOURS');
CREATE STREAM market_data (stock_name VARCHAR, market_time TIMESTAMP, sentiment DOUBLE)
  WITH (connector = 'files', format = 'json', path = '$DIR/md', rowtime = 'market_time', lateness = '2 HOURS');
"""
RW_DAY = "2024-09-24 "
STOCK_PRICES = [
    {"stock_name": name, "stock_time": RW_DAY + t, "price": p}
    for name, prices in (("TSLA", (250, 252, 255)), ("AMZN", (3300, 3310, 3320)), ("GOOG", (1400, 1410, 1420)))
    for t, p in zip(("09:30:00", "10:30:00", "11:30:00"), prices, strict=True)
]
MARKET_DATA = [
    {"stock_name": name, "market_time": RW_DAY + t, "sentiment": s}
    for name, sentiments in (("TSLA", (0.7, 0.8, 0.9)), ("AMZN", (0.6, 0.65, 0.7)), ("NVDA", (0.55, 0.6, 0.65)))
    for t, s in zip(("09:00:00", "10:00:00", "11:00:00"), sentiments, strict=True)
]
RW_MATCHED = [
    ("TSLA", RW_DAY + "09:30:00.000", 250, 0.7), ("TSLA", RW_DAY + "10:30:00.000", 252, 0.8),
    ("TSLA", RW_DAY + "11:30:00.000", 255, 0.9), ("AMZN", RW_DAY + "09:30:00.000", 3300, 0.6),
    ("AMZN", RW_DAY + "10:30:00.000", 3310, 0.65), ("AMZN", RW_DAY + "11:30:00.000", 3320, 0.7),
]


def test_risingwave_asof_inner_join_gives_the_documented_table(spark, tmp_path):
    sql = RW_DDL + """SELECT sp.stock_name, sp.stock_time, sp.price, md.sentiment
FROM stock_prices sp
ASOF JOIN market_data md
ON sp.stock_name = md.stock_name
AND md.market_time <= sp.stock_time;"""
    rows, _ = run_sql(spark, tmp_path, sql, {"sp": STOCK_PRICES, "md": MARKET_DATA})
    assert canonical(rows) == sorted(RW_MATCHED)
    assert [r["stock_time"] for r in rows] == sorted(r["stock_time"] for r in rows)


def test_risingwave_asof_left_join_keeps_goog_with_null_sentiment(spark, tmp_path):
    sql = RW_DDL + """SELECT sp.stock_name, sp.stock_time, sp.price, md.sentiment
FROM stock_prices sp
ASOF LEFT JOIN market_data md
ON sp.stock_name = md.stock_name
AND md.market_time <= sp.stock_time;"""
    rows, _ = run_sql(spark, tmp_path, sql, {"sp": STOCK_PRICES, "md": MARKET_DATA})
    goog = [("GOOG", RW_DAY + t, p, None) for t, p in (("09:30:00.000", 1400), ("10:30:00.000", 1410), ("11:30:00.000", 1420))]
    assert canonical(rows) == sorted([*RW_MATCHED, *goog], key=repr)
