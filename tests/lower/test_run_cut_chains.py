"""An outer stream-stream join followed by another join: `run` cuts the chain into one Spark
query per part, each part's ordered output (with rowtime bounds) the next part's input
(docs/runtime.md, "Outer joins inside a chain"). The differential test covers generated chains;
these pin the contract: the CLI, a live run without end of input, a restart, the rejections."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from runtime_helpers import read_output, run_in_two_parts, run_to_end, start, ts, write_jsonl
from streamjoin.errors import Unsupported
from streamjoin.lower.explain import explain_text
from streamjoin.lower.support import check_runnable
from streamjoin.plan import compile_sql

pytestmark = [pytest.mark.spark]  # runs, in the session and as `streamjoin run`

MINUTE = 60_000
W = "OVER (RANGE INTERVAL '1' MINUTE PRECEDING)"


def chain_sql(root) -> str:
    return f"""CREATE STREAM orders (id INT, item VARCHAR) WITH (connector = 'files', format = 'json', path = '{root / "orders"}');
CREATE STREAM payments (id INT, amount INT) WITH (connector = 'files', format = 'json', path = '{root / "payments"}');
CREATE STREAM shipments (id INT, carrier VARCHAR) WITH (connector = 'files', format = 'json', path = '{root / "shipments"}');
SELECT STREAM ROWTIME, o.id, o.item, p.amount, s.carrier
FROM orders AS o {W}
LEFT JOIN payments AS p {W} ON o.id = p.id
LEFT JOIN shipments AS s {W} ON s.id = o.id;
"""


def write_inputs(root, shipments=True) -> None:
    write_jsonl(root / "orders" / "1.json", [
        {"rowtime": ts(0), "id": 1, "item": "pen"},
        {"rowtime": ts(10_000), "id": 2, "item": "ink"},
        {"rowtime": ts(30_000), "id": 3, "item": "pad"},
    ])
    write_jsonl(root / "payments" / "1.json", [{"rowtime": ts(20_000), "id": 1, "amount": 5}])
    if shipments:
        write_shipments(root)


def write_shipments(root) -> None:
    write_jsonl(root / "shipments" / "1.json", [
        {"rowtime": ts(40_000), "id": 1, "carrier": "ups"},
        {"rowtime": ts(50_000), "id": 2, "carrier": "dhl"},  # order 2 has no payment: its NULL row meets it
        {"rowtime": ts(3 * MINUTE), "id": 3, "carrier": "fedex"},  # order 3's window ended at 01:30
    ])


# Order 1 meets payment 1 (co-present from 00:20) and shipment 1 (00:40). Order 2 never gets a
# payment; its NULL-extended row is still present (00:10 to 01:10) when shipment 2 arrives at
# 00:50: one row at 00:50, which one Spark query would miss (its second join's watermark has
# passed 00:50 by the time the first join emits that NULL row). Order 3 has neither: NULLs, at
# its own rowtime, first in rowtime order.
EXPECTED = [
    {"rowtime": ts(30_000), "id": 3, "item": "pad", "amount": None, "carrier": None},
    {"rowtime": ts(40_000), "id": 1, "item": "pen", "amount": 5, "carrier": "ups"},
    {"rowtime": ts(50_000), "id": 2, "item": "ink", "amount": None, "carrier": "dhl"},
]


def test_run_cli_gives_the_rows_of_a_left_join_followed_by_another_join_in_rowtime_order(tmp_path):
    write_inputs(tmp_path)
    query = tmp_path / "q.sql"
    query.write_text(chain_sql(tmp_path))
    result = subprocess.run(
        [sys.executable, "-m", "streamjoin.cli", "run", str(query), "--until-idle", "--output", "-",
         "--checkpoint", str(tmp_path / "ck")],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert [json.loads(line) for line in result.stdout.splitlines()] == EXPECTED
    status = json.loads((tmp_path / "ck" / "status.json").read_text())
    assert sorted(status["inputs"]) == ["o", "p", "s"]  # the user's inputs, not the cut's
    assert status["rows_emitted"] == 3 and status["late_rows"] == 0


def test_a_cut_chain_releases_rows_as_its_clocks_pass_them_without_end_of_input(spark, tmp_path):
    write_inputs(tmp_path)
    runner = start(spark, chain_sql(tmp_path), tmp_path / "run")
    try:
        runner.process_available()
        assert read_output(tmp_path / "run" / "out") == []  # nothing is final yet: clocks at 00:20
        for name in ("orders", "payments", "shipments"):  # every clock to 10:00, as bounds
            write_jsonl(tmp_path / name / "2.json", [{"rowtime": ts(10 * MINUTE), "_bound": True}])
        deadline = time.time() + 120
        while len(read_output(tmp_path / "run" / "out")) < 3 and time.time() < deadline:
            runner.process_available()  # the first part's release reaches the second as a bound
            time.sleep(0.5)
        assert read_output(tmp_path / "run" / "out") == EXPECTED
        status = runner.status.write(runner.query)
        assert status["join_clock"] == ts(10 * MINUTE)
    finally:
        runner.stop("stopped")


def test_a_cut_chain_resumes_from_its_checkpoint_without_losing_or_repeating_rows(spark, tmp_path):
    write_inputs(tmp_path, shipments=False)
    before, after = run_in_two_parts(spark, chain_sql(tmp_path), tmp_path / "run", lambda: write_shipments(tmp_path))
    assert before["rows_emitted"] == 0
    assert read_output(tmp_path / "run" / "out") == EXPECTED
    assert after["late_rows"] == 0


def test_a_chain_cut_twice_runs_three_queries(spark, tmp_path):
    write_inputs(tmp_path)
    write_jsonl(tmp_path / "returns" / "1.json", [{"rowtime": ts(45_000), "id": 1, "reason": "torn"},
                                                  {"rowtime": ts(55_000), "id": 2, "reason": "late"}])
    sql = chain_sql(tmp_path).replace(
        "CREATE STREAM shipments",
        f"CREATE STREAM returns (id INT, reason VARCHAR) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'returns'}');\n"
        "CREATE STREAM shipments",
    ).replace(";\n\n", ";\n").rstrip().rstrip(";") + f"\nJOIN returns AS r {W} ON r.id = s.id;"
    sql = sql.replace("SELECT STREAM ROWTIME, o.id, o.item, p.amount, s.carrier", "SELECT STREAM ROWTIME, o.id, p.amount, s.carrier, r.reason")
    runner = start(spark, sql, tmp_path / "run")
    assert len(runner.upstream) == 2
    status = run_to_end(runner)
    assert read_output(tmp_path / "run" / "out") == [
        {"rowtime": ts(45_000), "id": 1, "amount": 5, "carrier": "ups", "reason": "torn"},
        {"rowtime": ts(55_000), "id": 2, "amount": None, "carrier": "dhl", "reason": "late"},
    ]
    assert sorted(status["inputs"]) == ["o", "p", "r", "s"]


def test_a_cut_chain_joins_a_table_after_the_cut_and_reports_its_snapshot(spark, tmp_path):
    write_inputs(tmp_path)
    (tmp_path / "items").mkdir()
    (tmp_path / "items" / "items.csv").write_text("item,price\npen,2\nink,7\n")
    sql = chain_sql(tmp_path).replace(
        "SELECT STREAM ROWTIME, o.id, o.item, p.amount, s.carrier",
        f"CREATE TABLE items (item VARCHAR PRIMARY KEY, price INT) WITH (connector = 'files', format = 'csv', path = '{tmp_path / 'items'}');\n"
        "SELECT STREAM ROWTIME, o.id, p.amount, s.carrier, i.price",
    ).rstrip().rstrip(";") + "\nJOIN items AS i ON i.item = o.item;"
    runner = start(spark, sql, tmp_path / "run")
    status = run_to_end(runner)
    assert read_output(tmp_path / "run" / "out") == [  # order 3's pad is not in the table
        {"rowtime": ts(40_000), "id": 1, "amount": 5, "carrier": "ups", "price": 2},
        {"rowtime": ts(50_000), "id": 2, "amount": None, "carrier": "dhl", "price": 7},
    ]
    assert [s["rows"] for s in status["snapshots"]] == [2]


def rejected(sql: str) -> str:
    script = compile_sql(sql)
    with pytest.raises(Unsupported) as caught:
        check_runnable(script, script.final)
    return str(caught.value)


DDL = """CREATE STREAM a (k INT, ts TIMESTAMP) WITH (path = '/a', rowtime = 'ts');
CREATE STREAM b (k INT, ts TIMESTAMP) WITH (path = '/b', rowtime = 'ts');
CREATE STREAM c (k INT, ts TIMESTAMP) WITH (path = '/c', rowtime = 'ts');
"""


def test_a_cut_chain_inside_a_view_is_rejected():
    message = rejected(DDL + f"""CREATE VIEW v AS SELECT STREAM a.k, b.k AS bk FROM a {W} LEFT JOIN b {W} ON a.k = b.k JOIN c {W} ON c.k = a.k;
SELECT STREAM * FROM v;""")
    assert message == "a LEFT JOIN followed by another join inside a view is not supported by `run` yet; put the chain in the final query"


def test_a_cut_chain_into_an_s3_sink_is_rejected():
    message = rejected(DDL + f"""CREATE SINK out (k INT) WITH (connector = 's3', path = 's3://bucket/out/', format = 'parquet');
INSERT INTO out SELECT STREAM a.k FROM a {W} FULL JOIN b {W} ON a.k = b.k JOIN c {W} ON c.k = a.k;""")
    assert message == "a FULL JOIN followed by another join writes to --output (JSON Lines) in `run` yet, not to an S3 sink"


def test_a_later_join_without_time_bounds_on_every_earlier_input_is_rejected():
    sql = DDL.replace("CREATE STREAM", "CREATE SOURCE") + (
        "SELECT a.k FROM a LEFT JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' MINUTE "
        "JOIN c ON c.k = a.k AND c.ts BETWEEN a.ts AND a.ts + INTERVAL '1' MINUTE;"
    )
    assert rejected(sql) == (
        "a LEFT JOIN followed by another join: the later join with 'c' needs a time bound (windows or a time range) "
        "between 'c' and each of 'a', 'b'"
    )


def test_explain_says_where_the_chain_is_cut(tmp_path):
    text = explain_text(compile_sql(chain_sql(tmp_path)))
    assert text.count("then: the chain is cut here") == 1
    first, second = text.split("  join 2:")
    assert "the chain is cut here" in first and "the chain is cut here" not in second
