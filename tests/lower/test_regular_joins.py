"""RisingWave's regular joins (issue 40): a join of two streams without a time bound, under the
`risingwave` profile, keeps every row of both inputs and pairs rows whichever came first. Inner
joins append their pairs; outer joins write a changelog (`op`: +I, -D) whose NULL-extended row is
withdrawn when its first partner arrives. Its sources declare no time, so their rows are ordered
by arrival (none is late, whatever their timestamps say).

Checked on random rows that land in several files across micro-batches, on every join type: the
changelog never deletes a row it has not inserted, and folded it is the SQL join of every row read
(computed here in plain Python)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from changelog_helpers import debezium_events, fold_by, sql_join_rows
from runtime_helpers import read_output, run_to_end, write_jsonl
from streamjoin.runtime.pipeline import Pipeline

JOIN_TYPES = ("INNER", "LEFT", "RIGHT", "FULL")


def types(*quick: str) -> list:
    """The join types `make test` runs; `make test-long` runs the others too."""
    return [t if t in quick else pytest.param(t, marks=pytest.mark.long) for t in JOIN_TYPES]


def sql_join(orders: list[dict], pays: list[dict], join_type: str) -> Counter:
    """The SQL join of every row: (id, amount) per result row, NULL as None."""
    out = Counter()
    for o in orders:
        partners = [p for p in pays if o["id"] is not None and p["oid"] == o["id"]]
        out.update((o["id"], p["amount"]) for p in partners)
        if not partners and join_type in ("LEFT", "FULL"):
            out[(o["id"], None)] += 1
    if join_type in ("RIGHT", "FULL"):
        for p in pays:
            if not any(o["id"] is not None and p["oid"] == o["id"] for o in orders):
                out[(None, p["amount"])] += 1
    return out


def fold(rows: list[dict]) -> Counter:
    """The changelog's net content; a -D of a row not inserted fails."""
    content = Counter()
    for r in rows:
        key = (r["id"], r["amount"])
        if r.get("op", "+I") == "+I":
            content[key] += 1
        else:
            assert content[key] > 0, f"-D of {key}, which is not in the view: {rows}"
            content[key] -= 1
    return +content


def program(tmp_path: Path, join_type: str) -> str:
    return f"""
    CREATE SOURCE orders (id INT, cust INT, ordered_at TIMESTAMP)
      WITH (connector = 'files', path = '{tmp_path}/orders') FORMAT PLAIN ENCODE JSON;
    CREATE SOURCE pays (oid INT, amount INT, paid_at TIMESTAMP)
      WITH (connector = 'files', path = '{tmp_path}/pays') FORMAT PLAIN ENCODE JSON;
    CREATE MATERIALIZED VIEW paid AS
      SELECT o.id, p.amount FROM orders AS o {join_type} JOIN pays AS p ON o.id = p.oid;
    """


@pytest.mark.parametrize("join_type", types("INNER", "LEFT", "FULL"))
def test_a_regular_join_folds_to_the_sql_join_of_every_row_read_across_micro_batches(spark, tmp_path, join_type):
    rng = random.Random(f"regular-{join_type}")
    orders = [{"id": rng.choice([1, 2, 3, 4, 5, None]), "cust": n, "ordered_at": "2024-01-01 00:00:00"} for n in range(14)]
    pays = [{"oid": rng.choice([1, 2, 3, 6, None]), "amount": 100 + n, "paid_at": "2023-12-31 00:00:00"} for n in range(12)]
    write_jsonl(tmp_path / "orders" / "a.json", orders[:7])
    write_jsonl(tmp_path / "pays" / "a.json", pays[:3])
    runner = Pipeline.from_sql(program(tmp_path, join_type), "rw.sql", dialect="risingwave").runner(
        spark, tmp_path / "checkpoint", str(tmp_path / "out")).start()
    runner.process_available()  # the first files: some rows wait for partners that come later
    runner.process_available()  # a second pass: Spark's watermark moves after a batch
    first = read_output(tmp_path / "out")
    write_jsonl(tmp_path / "pays" / "b.json", pays[3:])
    write_jsonl(tmp_path / "orders" / "b.json", orders[7:])
    status = run_to_end(runner)
    rows = read_output(tmp_path / "out")
    assert status["late_rows"] == 0, status  # arrival order: whatever the timestamps, nothing is late
    assert ("op" in rows[0]) == (join_type != "INNER"), rows[0]  # inner joins append plain rows
    assert fold(rows) == sql_join(orders, pays, join_type), (rows, json.dumps(status))
    # live, before the end of input: the first files' rows were joined already (their arrival
    # instant is complete once both inputs were read)
    assert fold(first) == sql_join(orders[:7], pays[:3], join_type), first


def test_explain_says_a_regular_joins_state_grows_without_bound(tmp_path):
    from streamjoin.lower.explain import explain_text
    from streamjoin.plan import compile_sql

    text = explain_text(compile_sql(program(tmp_path, "LEFT"), "rw.sql", dialect="risingwave"))
    assert "[regular join]" in text and "grows without bound" in text and "EMIT CHANGES" not in text
    assert "the instant each row is read: it declares no time" in text


# ---------------------------------------------------------------------------- tables that change


TABLES = """
    CREATE SOURCE orders (oid INT, cust INT) WITH (connector = 'files', path = '{d}/orders') FORMAT PLAIN ENCODE JSON;
    CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR, region INT)
      WITH (connector = 'files', path = '{d}/customers') FORMAT DEBEZIUM ENCODE JSON;
    CREATE TABLE regions (id INT PRIMARY KEY, label VARCHAR)
      WITH (connector = 'files', path = '{d}/regions') FORMAT DEBEZIUM ENCODE JSON;
"""


def _run_in_three_parts(spark, tmp_path: Path, sql: str, batches: list[dict[str, list[dict]]],
                        dialect: str | None = None) -> tuple[list[dict], dict]:
    """Each batch's files, processed; the query restarted from its checkpoint after the second."""
    def runner():
        return Pipeline.from_sql(sql, "rw.sql", dialect=dialect).runner(spark, tmp_path / "checkpoint", str(tmp_path / "out")).start()

    current = runner()
    for n, batch in enumerate(batches):
        for folder, rows in batch.items():
            write_jsonl(tmp_path / folder / f"{n}.json", rows)
        if n == len(batches) - 1:
            status = run_to_end(current)
            return read_output(tmp_path / "out"), status
        current.process_available()
        current.process_available()
        if n == 1:  # a restart in the middle: state and output resume from the checkpoint
            current.stop("stopped")
            current = runner()
    raise AssertionError("no batches")


@pytest.mark.parametrize("join_type", types("FULL"))  # (a FULL join's rows are a LEFT join's and more)
def test_a_stream_joined_with_a_table_that_changes_folds_to_the_join_with_the_tables_last_rows(spark, tmp_path, join_type):
    rng = random.Random(f"cdc-{join_type}")
    state: dict = {}
    batches, orders = [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, 4, None])} for i in range(5)]
        orders += new_orders
        events = debezium_events(rng, [1, 2, 3, 5], {"name": ["ann", "bob", None], "region": [1]}, 6, state)
        batches.append({"orders": new_orders, "customers": events})
    sql = TABLES.format(d=tmp_path) + f"""
    CREATE MATERIALIZED VIEW named AS
      SELECT o.oid, c.id, c.name FROM orders AS o {join_type} JOIN customers AS c ON o.cust = c.id;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches)
    want = sql_join_rows(orders, list(state.values()), lambda o, c: o["cust"] is not None and o["cust"] == c["id"],
                         join_type, lambda o, c: (o and o["oid"], c and c["id"], c and c["name"]))
    assert status["late_rows"] == 0 and status["rejected_rows"] == 0, status
    assert fold_by(rows, ("oid", "id", "name")) == want, rows


def test_two_tables_that_change_join_on_a_column_that_is_not_a_key_and_follow_every_change(spark, tmp_path):
    rng = random.Random("cdc-two-tables")
    customers, regions = {}, {}
    batches = [{"customers": debezium_events(rng, [1, 2, 3, 4], {"name": ["ann", "bob"], "region": [1, 2, None]}, 7, customers),
                "regions": debezium_events(rng, [1, 2, 3], {"label": ["north", "south"]}, 4, regions)}
               for _ in range(3)]
    sql = TABLES.format(d=tmp_path) + """
    CREATE MATERIALIZED VIEW placed AS
      SELECT c.id, c.region, r.label FROM customers AS c FULL JOIN regions AS r ON c.region = r.id;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches)
    want = sql_join_rows(list(customers.values()), list(regions.values()),
                         lambda c, r: c["region"] is not None and c["region"] == r["id"], "FULL",
                         lambda c, r: (c and c["id"], c and c["region"], r and r["label"]))
    assert status["rejected_rows"] == 0, status
    assert fold_by(rows, ("id", "region", "label")) == want, rows


def joined(left: list[tuple], right: list[dict], on, join_type: str, width: int) -> list[tuple]:
    """The SQL join of rows (tuples of one dict per input, None: NULL-extended) with `right`."""
    out, matched = [], set()
    for row in left:
        partners = [n for n, r in enumerate(right) if on(row, r)]
        out += [(*row, right[n]) for n in partners]
        matched.update(partners)
        if not partners and join_type in ("LEFT", "FULL"):
            out.append((*row, None))
    if join_type in ("RIGHT", "FULL"):
        out += [(*(None,) * width, r) for n, r in enumerate(right) if n not in matched]
    return out


@pytest.mark.parametrize("first,second", [pytest.param("INNER", "LEFT", marks=pytest.mark.long), ("FULL", "FULL"),
                                          pytest.param("LEFT", "INNER", marks=pytest.mark.long),
                                          pytest.param("RIGHT", "RIGHT", marks=pytest.mark.long)])
def test_a_chain_of_regular_joins_with_tables_that_change_folds_to_the_join_of_the_inputs_as_they_stand(spark, tmp_path, first, second):
    """Three inputs, two regular joins (issue 40): the second join's left input is the first
    one's changelog, so a customer's update withdraws its orders' rows and their regions."""
    rng = random.Random(f"chain-{first}-{second}")
    customers, regions = {}, {}
    batches, orders = [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, 4, None])} for i in range(4)]
        orders += new_orders
        batches.append({"orders": new_orders,
                        "customers": debezium_events(rng, [1, 2, 3], {"name": ["ann", "bob"], "region": [1, 2, None]}, 5, customers),
                        "regions": debezium_events(rng, [1, 2, 3], {"label": ["north", "south"]}, 3, regions)})
    sql = TABLES.format(d=tmp_path) + f"""
    CREATE MATERIALIZED VIEW placed AS
      SELECT o.oid, c.id AS cid, c.name, r.id AS rid, r.label
      FROM orders AS o {first} JOIN customers AS c ON o.cust = c.id {second} JOIN regions AS r ON c.region = r.id;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    pairs = joined([(o,) for o in orders], list(customers.values()), lambda row, c: row[0]["cust"] == c["id"], first, 1)
    chain = joined(pairs, list(regions.values()), lambda row, r: row[1] is not None and row[1]["region"] == r["id"], second, 2)
    want = Counter((o and o["oid"], c and c["id"], c and c["name"], r and r["id"], r and r["label"]) for o, c, r in chain)
    assert status["rejected_rows"] == 0 and status["late_rows"] == 0, status
    assert fold_by(rows, ("oid", "cid", "name", "rid", "label")) == want, rows


def test_an_inner_chain_of_regular_joins_of_streams_appends_every_combination(spark, tmp_path):
    rng = random.Random("chain-inner")
    streams = {name: [{"k": rng.choice([1, 2, 3, None]), "n": f"{name}{i}"} for i in range(8)] for name in ("a", "b", "c")}
    sql = "".join(f"CREATE SOURCE {name} (k INT, n VARCHAR) WITH (connector = 'files', path = '{tmp_path}/{name}') "
                  "FORMAT PLAIN ENCODE JSON;\n" for name in streams)
    sql += "CREATE MATERIALIZED VIEW abc AS SELECT a.n AS an, b.n AS bn, c.n AS cn FROM a JOIN b ON a.k = b.k JOIN c ON c.k = b.k;"
    batches = [{name: rows[4 * part:4 * part + 4] for name, rows in streams.items()} for part in (0, 1)]
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    want = Counter((a["n"], b["n"], c["n"]) for a in streams["a"] for b in streams["b"] for c in streams["c"]
                   if a["k"] is not None and a["k"] == b["k"] == c["k"])
    assert "op" not in rows[0] and Counter((r["an"], r["bn"], r["cn"]) for r in rows) == want, rows


def test_an_upsert_sink_holds_the_joins_rows_as_they_stand_after_updates_deletes_and_a_restart(spark, tmp_path):
    from deltalake import DeltaTable

    rng = random.Random("cdc-upsert-sink")
    state: dict = {}
    batches, orders = [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, None])} for i in range(4)]
        orders += new_orders
        batches.append({"orders": new_orders,
                        "customers": debezium_events(rng, [1, 2, 3], {"name": ["ann", "bob"], "region": [1]}, 5, state)})
    table = tmp_path / "enriched"
    sql = TABLES.format(d=tmp_path) + f"""
    CREATE SINK enriched WITH (connector = 'files', path = '{table}', format = 'delta', type = 'upsert', primary_key = 'oid');
    INSERT INTO enriched SELECT o.oid, c.name FROM orders AS o LEFT JOIN customers AS c ON o.cust = c.id;
    """
    _, status = _run_in_three_parts(spark, tmp_path, sql, batches)
    got = sorted((r["oid"], r["name"]) for r in DeltaTable(str(table)).to_pyarrow_table().to_pylist())
    want = sorted((o["oid"], state[o["cust"]]["name"] if o["cust"] in state else None) for o in orders)
    assert got == want, (got, want, status)
    assert status["rejected_rows"] == 0, status


def test_a_changelog_into_a_sink_that_appends_is_refused_with_what_to_declare():
    from streamjoin.errors import Unsupported

    sql = TABLES.format(d="/tmp/x") + """
    CREATE SINK enriched WITH (connector = 'files', path = '/tmp/x/out', format = 'delta');
    INSERT INTO enriched SELECT o.oid, c.name FROM orders AS o LEFT JOIN customers AS c ON o.cust = c.id;
    """
    with pytest.raises(Unsupported, match="declare it type = 'upsert', primary_key = 'col, ...'"):
        Pipeline.from_sql(sql, "rw.sql")


@pytest.mark.parametrize("watermark", [pytest.param(False, marks=pytest.mark.long), True])
def test_a_bounded_inner_regular_join_runs_on_the_batch_join_with_the_operators_rows(spark, tmp_path, watermark):
    """`--until-idle`: every row is read before the end, so the join of all of them is the answer;
    Spark's batch engine gives it (issue 42), the rows the operator gives, with sources that
    declare their time and sources read in arrival order."""
    from streamjoin.settings import Settings

    rng = random.Random(f"bounded-regular-{watermark}")
    orders = [{"id": rng.choice([1, 2, 3, 4, 5, None]), "cust": n, "ordered_at": f"2024-01-01 00:{rng.randint(0, 59):02d}:00"}
              for n in range(40)]
    pays = [{"oid": rng.choice([1, 2, 3, 6, None]), "amount": 100 + n, "paid_at": f"2024-01-01 00:{rng.randint(0, 59):02d}:00"}
            for n in range(30)]
    for name, rows in (("orders", orders), ("pays", pays)):
        write_jsonl(tmp_path / name / "a.json", rows[:len(rows) // 2])
        write_jsonl(tmp_path / name / "b.json", rows[len(rows) // 2:])
    sql = program(tmp_path, "INNER")
    if watermark:  # each source's own time, with a lateness that keeps every row on time
        sql = (sql.replace("ordered_at TIMESTAMP)", "ordered_at TIMESTAMP, WATERMARK FOR ordered_at AS ordered_at - INTERVAL '1' HOUR)")
               .replace("paid_at TIMESTAMP)", "paid_at TIMESTAMP, WATERMARK FOR paid_at AS paid_at - INTERVAL '1' HOUR)"))
    runs = {}
    for operator in ("auto", "custom"):
        pipeline = Pipeline.from_sql(sql, "rw.sql", Settings(join_operator=operator), dialect="risingwave")
        runner = pipeline.runner(spark, tmp_path / operator, str(tmp_path / f"out-{operator}"), until_idle=True).start()
        assert (type(runner.sink).__name__ == "BatchJoinSink") == (operator == "auto")
        status = run_to_end(runner)
        assert status["late_rows"] == 0
        rows = read_output(tmp_path / f"out-{operator}")
        runs[operator] = Counter(json.dumps(r, sort_keys=True) for r in rows)
        assert Counter((r["id"], r["amount"]) for r in rows) == sql_join(orders, pays, "INNER")
    assert runs["auto"] == runs["custom"]


def test_only_a_bounded_inner_regular_join_of_append_only_streams_runs_on_the_batch_join(tmp_path):
    from streamjoin.lower.explain import explain_text
    from streamjoin.lower.strategy import LoweringOptions, batch_reason
    from streamjoin.plan import compile_sql

    def reason(join_type: str, bounded: bool = True, operator: str = "auto"):
        script = compile_sql(program(tmp_path, join_type), "rw.sql", dialect="risingwave")
        return batch_reason(script, script.final, LoweringOptions(operator, bounded=bounded))

    assert reason("INNER") is None
    assert reason("INNER", bounded=False, operator="batch") is None
    assert "bounded" in reason("INNER", bounded=False)
    assert "changelog" in reason("LEFT")
    assert reason("INNER", operator="custom") is not None
    text = explain_text(compile_sql(program(tmp_path, "INNER"), "rw.sql", dialect="risingwave"))
    assert "with --until-idle: streamjoin's batch interval join instead" in text


def test_a_chain_whose_joins_share_a_key_runs_in_groups_by_it_and_folds_to_the_sql_join(spark, tmp_path):
    """`o LEFT JOIN c ON o.cust = c.id FULL JOIN p ON p.cust = o.cust`: every combination's rows
    share one customer id, so the chain is grouped by it (explain says so) and still folds to the
    SQL join of the inputs as they stand, with the customers' updates and deletes."""
    from streamjoin.lower.explain import explain_text
    from streamjoin.plan import compile_sql

    rng = random.Random("chain-shared-key")
    customers: dict = {}
    batches, orders, pays = [], [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, 4, None])} for i in range(4)]
        new_pays = [{"oid": 100 + 10 * n + i, "cust": rng.choice([1, 2, 5, None])} for i in range(3)]
        orders += new_orders
        pays += new_pays
        batches.append({"orders": new_orders, "pays": new_pays,
                        "customers": debezium_events(rng, [1, 2, 3], {"name": ["ann", "bob"], "region": [1]}, 4, customers)})
    sql = TABLES.format(d=tmp_path) + f"""
    CREATE SOURCE pays (oid INT, cust INT) WITH (connector = 'files', path = '{tmp_path}/pays') FORMAT PLAIN ENCODE JSON;
    CREATE MATERIALIZED VIEW settled AS
      SELECT o.oid, c.name, p.oid AS paid FROM orders AS o LEFT JOIN customers AS c ON o.cust = c.id
      FULL JOIN pays AS p ON p.cust = o.cust;
    """
    assert "groups: by the key every join of the chain shares, o.cust = c.id = p.cust" in explain_text(
        compile_sql(sql, "rw.sql", dialect="risingwave"))
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    first = joined([(o,) for o in orders], list(customers.values()), lambda row, c: row[0]["cust"] == c["id"], "LEFT", 1)
    chain = joined(first, pays, lambda row, p: row[0] is not None and row[0]["cust"] is not None and row[0]["cust"] == p["cust"],
                   "FULL", 2)
    want = Counter((o and o["oid"], c and c["name"], p and p["oid"]) for o, c, p in chain)
    assert fold_by(rows, ("oid", "name", "paid")) == want, rows
