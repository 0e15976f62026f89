"""Lenses' stream-table join where the table is a `SELECT TABLE` view over a topic that changes
by key (seed 004, "Non windowed joins"): a table row that arrives later meets the stream rows
still waiting for one, so under EMIT EAGER "Keyboard appears twice"."""

from __future__ import annotations

from runtime_helpers import run_until_idle, ts, write_jsonl

DDL = """CREATE STREAM customers (_key INTEGER, id INTEGER, name VARCHAR)
  WITH (connector = 'files', format = 'json', path = '{dir}/customers');
CREATE STREAM orders (item VARCHAR, customer_id INTEGER)
  WITH (connector = 'files', format = 'json', path = '{dir}/orders');
WITH customersTable AS (SELECT TABLE * FROM customers);
"""
# The seed's customers table lists "t = 10s 1 John" first and then, as the later arrival,
# "t = 10s 2 John"; the example is about customer 2 arriving after the Keyboard order, so the
# input here is Frank (1) at 0 s and John (2) at 10 s.
CUSTOMERS = [{"_key": 1, "id": 1, "name": "Frank", "rowtime": ts(0)}, {"_key": 2, "id": 2, "name": "John", "rowtime": ts(10_000)}]
ORDERS = [{"item": "Computer", "customer_id": 1, "rowtime": ts(0)}, {"item": "Keyboard", "customer_id": 2, "rowtime": ts(1_000)}]


def run(spark, tmp_path, emit: str, join: str = "orders LEFT JOIN customersTable") -> list[tuple]:
    write_jsonl(tmp_path / "customers" / "c.json", CUSTOMERS)
    write_jsonl(tmp_path / "orders" / "o.json", ORDERS)
    # the seed writes `ON customers.id = orders.id`; orders have customer_id, not id
    sql = DDL.format(dir=tmp_path) + f"""SELECT STREAM customersTable.name, orders.item
FROM {join} ON customersTable.id = orders.customer_id {emit};"""
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")
    return [tuple(r.values()) for r in rows]


def test_lenses_keyboard_appears_twice_when_its_customer_arrives_later(spark, tmp_path):
    # Computer meets Frank (same instant: the table row of that instant counts); Keyboard finds
    # no customer 2 and is emitted NULL-extended at once; John (2) arrives at 10 s and meets it
    assert run(spark, tmp_path, "EMIT EAGER") == [("Frank", "Computer"), (None, "Keyboard"), ("John", "Keyboard")]


def test_the_changelog_join_in_final_mode_emits_only_the_later_match(spark, tmp_path):
    assert run(spark, tmp_path, "") == [("Frank", "Computer"), ("John", "Keyboard")]


def test_the_changelog_join_in_changes_mode_withdraws_the_null_row(spark, tmp_path):
    assert run(spark, tmp_path, "EMIT CHANGES") == [
        ("+I", "Frank", "Computer"), ("+I", None, "Keyboard"), ("-D", None, "Keyboard"), ("+I", "John", "Keyboard"),
    ]


def test_a_table_right_join_stream_is_the_same_changelog_join(spark, tmp_path):
    got = run(spark, tmp_path, "EMIT EAGER", "customersTable RIGHT JOIN orders")
    assert got == [("Frank", "Computer"), (None, "Keyboard"), ("John", "Keyboard")]
