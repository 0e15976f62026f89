"""The seeds' stream-stream examples, run to the end of input (`--until-idle`) in the test session.

Where a seed contradicts itself or SEMANTICS.md, the expected rows are SEMANTICS.md's, and a
comment says why.
"""

from __future__ import annotations

from pathlib import Path

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
