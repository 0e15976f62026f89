"""Differential tests of the process-time temporal join (issue 44): a stream joined with a real
PostgreSQL table `FOR SYSTEM_TIME AS OF PROCTIME()` while the table changes between
micro-batches (random inserts, updates of the joined columns, deletes, keys that come back),
stream keys repeated, missing and NULL, INNER and LEFT, with and without a condition on the
table's side. Each run is compared with a plain-Python reading of SEMANTICS' process-time rule
(docs/semantics-decisions.md: each micro-batch reads the table's current contents; a row meets
the table as it stood when its micro-batch ran), written here, independent of the code under
test: the test keeps its own copy of the table and applies each change to both.

Seeds as tests/lower/test_shape_differential.py draws them: one from a fixed base seed and one
from today's date (STREAMJOIN_SHAPE_SEED overrides it) in `make test`, more in `make test-long`;
a failure names its seed."""

from __future__ import annotations

import random
import uuid
from collections import Counter

import pytest
from pg_helpers import PG_URL, pg_execute
from runtime_helpers import read_output, start, ts, write_jsonl
from test_shape_differential import DAILY_SEED

pytestmark = [pytest.mark.postgres]  # a real PostgreSQL table
BASE_SEED = 4405
KEYS = (1, 2, 3, 4, 5)


@pytest.fixture
def products():
    name = f"sj_temporal_{uuid.uuid4().hex[:10]}"
    pg_execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, product_name VARCHAR(32), price INT)")
    yield name
    pg_execute(f"DROP TABLE IF EXISTS {name}")


def sql(directory, table: str, join: str, condition: bool) -> str:
    return f"""CREATE STREAM sales (transaction_id INT, product_id INT, process_time TIMESTAMP)
  WITH (connector = 'files', format = 'json', path = '{directory}/sales', rowtime = 'process_time');
CREATE TABLE products (id INT, product_name VARCHAR, price INT)
  WITH (connector = 'postgres', url = '{PG_URL}', table = '{table}');
SELECT transaction_id, product_name, price
FROM sales
{join} products FOR SYSTEM_TIME AS OF PROCTIME()
ON product_id = id{' AND price > 15' if condition else ''};"""


def change(rng: random.Random, table: dict, name: str, serial: int) -> str:
    """One random change, applied to `table` (id -> (name, price)); its SQL."""
    kind = rng.choice(("insert", "update", "delete")) if table else "insert"
    if kind == "insert" and len(table) < len(KEYS):
        key = rng.choice([k for k in KEYS if k not in table])
        table[key] = (f"p{key}-{serial}", rng.randint(1, 30))
        return f"INSERT INTO {name} VALUES ({key}, '{table[key][0]}', {table[key][1]})"
    key = rng.choice(sorted(table))
    if kind == "delete":
        del table[key]
        return f"DELETE FROM {name} WHERE id = {key}"
    table[key] = (f"p{key}-{serial}", rng.randint(1, 30))
    return f"UPDATE {name} SET product_name = '{table[key][0]}', price = {table[key][1]} WHERE id = {key}"


def cases():
    seeds = [BASE_SEED * 1000 + i for i in range(3)] + [DAILY_SEED * 1000 + 80 + i for i in range(3)]
    for i, seed in enumerate(seeds):
        yield pytest.param(seed, id=f"{seed}", marks=() if i in (0, 3) else pytest.mark.long)


@pytest.mark.parametrize("seed", list(cases()))
def test_a_stream_joined_with_a_changing_postgresql_table_as_of_processing_time_meets_it_as_it_stood_at_each_batch(
        spark, tmp_path, products, seed):
    rng = random.Random(seed)
    join, condition = rng.choice(("JOIN", "LEFT JOIN")), rng.random() < 0.4
    table: dict[int, tuple[str, int]] = {}
    expected: Counter = Counter()
    log = []
    for serial in range(rng.randint(0, 3)):  # the table before the query starts
        log.append(change(rng, table, products, serial))
        pg_execute(log[-1])
    n = 0
    runner = start(spark, sql(tmp_path, products, join, condition), tmp_path)
    try:
        for batch in range(rng.randint(2, 4)):
            if batch:  # changes between micro-batches
                for serial in range(rng.randint(1, 3)):
                    log.append(change(rng, table, products, 10 * batch + serial))
                    pg_execute(log[-1])
            rows = []
            for _ in range(rng.randint(0, 5)):
                n += 1
                key = rng.choice((*KEYS, None))
                rows.append({"transaction_id": n, "product_id": key, "process_time": ts(1000 * n)})
                hit = table.get(key)
                if hit and (not condition or hit[1] > 15):
                    expected[(n, *hit)] += 1
                elif join == "LEFT JOIN":
                    expected[(n, None, None)] += 1
            log.append(f"-- batch {batch}: {[(r['transaction_id'], r['product_id']) for r in rows]}")
            write_jsonl(tmp_path / "sales" / f"{batch}.json", rows)
            runner.process_available()
        runner.end_of_input()
    finally:
        status = runner.stop("finished")
    got = Counter((r["transaction_id"], r["product_name"], r["price"]) for r in read_output(tmp_path / "out"))
    assert status["late_rows"] == 0
    assert got == expected, (f"seed {seed} ({'daily' if seed >= DAILY_SEED * 1000 else 'base'}), {join}, "
                             f"condition {condition}\n" + "\n".join(log))
