"""RisingWave's process-time temporal join (`JOIN t FOR SYSTEM_TIME AS OF PROCTIME()`) against a
real PostgreSQL table: every micro-batch reads the table's current contents (no snapshot)."""

from __future__ import annotations

import json
import uuid

import pytest
from pg_helpers import PG_URL, pg_execute
from runtime_helpers import read_output, start, ts, write_jsonl

pytestmark = [pytest.mark.postgres]  # a real PostgreSQL table

URL = PG_URL


@pytest.fixture
def products():
    name = f"sj_products_{uuid.uuid4().hex[:10]}"
    pg_execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, product_name VARCHAR(32), price INT);"
            f"INSERT INTO {name} VALUES (1, 'widget', 10), (2, 'gadget', 20);")
    yield name
    pg_execute(f"DROP TABLE IF EXISTS {name}")


def sql(directory, table: str, join: str = "JOIN", ddl_key: str = "") -> str:
    # the seed's DDL declares no key: the engine reads it from PostgreSQL's catalog
    return f"""CREATE STREAM sales (transaction_id INT, product_id INT, quantity INT, process_time TIMESTAMP)
  WITH (connector = 'files', format = 'json', path = '{directory}/sales', rowtime = 'process_time');
CREATE TABLE products (id INT{ddl_key}, product_name VARCHAR, price INT)
  WITH (connector = 'postgres', url = '{URL}', table = '{table}');
SELECT transaction_id, product_id, quantity, product_name, price
FROM sales
{join} products FOR SYSTEM_TIME AS OF PROCTIME()
ON product_id = id;"""


def sale(n: int, product: int) -> dict:
    return {"transaction_id": n, "product_id": product, "quantity": 1, "process_time": ts(1000 * n)}


def test_rows_processed_after_an_update_see_the_new_price_and_earlier_rows_keep_the_old(spark, tmp_path, products):
    write_jsonl(tmp_path / "sales" / "1.json", [sale(1, 1), sale(2, 2)])
    runner = start(spark, sql(tmp_path, products, "LEFT JOIN"), tmp_path)
    try:
        runner.process_available()
        pg_execute(f"UPDATE {products} SET price = 99 WHERE id = 1")
        write_jsonl(tmp_path / "sales" / "2.json", [sale(3, 1), sale(4, 3)])
        runner.process_available()
        runner.end_of_input()
    finally:
        status = runner.stop("finished")
    rows = read_output(tmp_path / "out")
    assert [(r["transaction_id"], r["product_name"], r["price"]) for r in rows] == [
        (1, "widget", 10), (2, "gadget", 20), (3, "widget", 99), (4, None, None),
    ]
    assert status["snapshots"] == []  # a temporal table is re-read, not snapshotted


def test_an_inner_temporal_join_drops_rows_without_a_product(spark, tmp_path, products):
    write_jsonl(tmp_path / "sales" / "1.json", [sale(1, 1), sale(2, 5)])
    runner = start(spark, sql(tmp_path, products), tmp_path)
    try:
        runner.process_available()
        runner.end_of_input()
    finally:
        runner.stop("finished")
    assert [r["transaction_id"] for r in read_output(tmp_path / "out")] == [1]


def test_a_temporal_join_on_a_table_without_a_primary_key_is_rejected(spark, tmp_path):
    from streamjoin.errors import Unsupported

    name = f"sj_nokey_{uuid.uuid4().hex[:10]}"
    pg_execute(f"CREATE TABLE {name} (id INT, product_name VARCHAR(32), price INT)")
    try:
        with pytest.raises(Unsupported, match="has no primary key in PostgreSQL"):
            start(spark, sql(tmp_path, name), tmp_path)
    finally:
        pg_execute(f"DROP TABLE {name}")


def test_a_temporal_join_must_cover_the_catalogs_primary_key(spark, tmp_path):
    from streamjoin.errors import Unsupported

    name = f"sj_twokey_{uuid.uuid4().hex[:10]}"
    pg_execute(f"CREATE TABLE {name} (id INT, region INT, product_name VARCHAR(32), price INT, PRIMARY KEY (id, region))")
    try:
        with pytest.raises(Unsupported, match=r"must cover its primary key \(id, region\)"):
            start(spark, sql(tmp_path, name), tmp_path)
    finally:
        pg_execute(f"DROP TABLE {name}")


@pytest.fixture
def pg_proxy():
    from pg_helpers import PgProxy

    proxy = PgProxy()
    yield proxy
    proxy.down()


def test_postgresql_down_at_start_fails_the_start_naming_the_server_and_a_later_start_runs(spark, tmp_path, products, pg_proxy):
    from streamjoin.errors import one_line_reason

    write_jsonl(tmp_path / "sales" / "1.json", [sale(1, 1), sale(2, 2)])
    query = sql(tmp_path, products, "LEFT JOIN").replace(URL, pg_proxy.url)
    with pytest.raises(Exception) as caught:  # the catalog read for the primary key, before any query starts
        start(spark, query, tmp_path)
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{pg_proxy.port}/test" in one_line_reason(caught.value)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("part-*"))

    pg_proxy.up()
    runner = start(spark, query, tmp_path)
    try:
        runner.process_available()
        runner.end_of_input()
    finally:
        runner.stop("finished")
    assert [(r["transaction_id"], r["price"]) for r in read_output(tmp_path / "out")] == [(1, 10), (2, 20)]


def test_postgresql_down_during_a_temporal_join_fails_the_query_clearly_and_a_restart_resumes_losing_nothing(
        spark, tmp_path, products, pg_proxy):
    from streamjoin.errors import one_line_reason

    pg_proxy.up()
    query = sql(tmp_path, products, "LEFT JOIN").replace(URL, pg_proxy.url)
    write_jsonl(tmp_path / "sales" / "1.json", [sale(1, 1), sale(2, 2)])
    runner = start(spark, query, tmp_path)
    try:
        runner.process_available()
        pg_proxy.down()
        write_jsonl(tmp_path / "sales" / "2.json", [sale(3, 1), sale(4, 3)])
        with pytest.raises(Exception) as caught:
            runner.process_available()
    finally:
        runner.fail(caught.value) if "caught" in locals() else runner.stop("stopped")
    reason = one_line_reason(caught.value)
    assert f"at 127.0.0.1:{pg_proxy.port}/test" in reason and "PostgreSQL" in reason, reason
    status = json.loads((tmp_path / "checkpoint" / "status.json").read_text())
    assert status["state"] == "failed" and status["error"] == reason

    pg_proxy.up()  # PostgreSQL is back: the same checkpoint resumes with the batch that failed
    runner = start(spark, query, tmp_path)
    try:
        runner.process_available()
        runner.end_of_input()
    finally:
        runner.stop("finished")
    rows = [(r["transaction_id"], r["product_name"], r["price"]) for r in read_output(tmp_path / "out")]
    assert rows == [(1, "widget", 10), (2, "gadget", 20), (3, "widget", 10), (4, None, None)]
