"""The corpus's programs whose inputs are PostgreSQL (change data capture, a JDBC table), Kinesis
and S3 run end to end as written (issue 39): each on servers of the test's own, filled with
generated rows, its declared servers pointed at them by the environment (STREAMJOIN_CDC_URL,
STREAMJOIN_KAFKA_BOOTSTRAP, AWS_ENDPOINT_URL), and each result compared with the answer the test
computes itself."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import pytest
from test_corpus_runs import CORPUS, assert_columns, assert_finished


def rows_by_view(out: Path) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    for part in sorted(out.rglob("part-*.jsonl")):
        for line in part.read_text().splitlines():
            row = json.loads(line)
            rows.setdefault(row.get("stream") or part.parent.name, []).append(row)
    return rows


def folded(rows: list[dict]) -> Counter:
    """A changelog's content (its columns but `op` and `stream`): +I adds a row, -D takes it back
    (plain rows add)."""
    content = Counter()
    for r in rows:
        content[tuple(v for c, v in r.items() if c not in ("op", "stream"))] += -1 if r.get("op") in ("-D", "-U") else 1
    return +content


def run_and_stop(spark, pipeline, checkpoint: Path, out: Path) -> None:
    """Each output of the program started as `run` starts it (its own checkpoint under
    `outputs/`), what its inputs hold processed, and stopped as SIGTERM stops it: a restart
    from `checkpoint` resumes them."""
    from streamjoin.runtime.runner import Runner

    for query in pipeline.script.runs:
        where = checkpoint / "outputs" / query.name
        lowered = pipeline.lower(spark, where, out / "late", False, query)
        runner = Runner(spark, lowered, where, str(out), query.name, suffix=f"-{query.name}").start()
        try:
            runner.process_available()
            runner.process_available()
        except Exception as error:
            runner.fail(error)
            raise
        assert runner.stop("stopped")["state"] == "stopped"


def vendors_answer(vendors: dict[int, tuple], listings: list[dict], invoices: int) -> dict[str, Counter]:
    """risingwave/03's three views as SQL defines them over the tables as they stand."""
    regions = Counter(region for _, region in vendors.values())
    windows = {(r["vendor_id"], r["listed_at"] - r["listed_at"] % 10) for r in listings}
    active = Counter((v, vendors[v][0], dt.datetime.fromtimestamp(start, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.000"))
                     for v, start in windows if v in vendors)
    return {"region_vendors": Counter(regions.items()), "active_vendors": active, "invoices_rw_count": Counter({(invoices,): 1})}


@pytest.mark.kafka
def test_risingwave_03_keeps_its_three_views_of_cdc_tables_and_a_topic_through_changes_and_a_restart(
        spark, logical_postgres, tmp_path, monkeypatch):
    """risingwave/03 unedited: two postgres-cdc tables (their password a CREATE SECRET), a Kafka
    source behind a view, a CDC table joined with TUMBLE groups of that view, and two counts of
    the CDC tables. Every materialized view nothing reads is written (each row led by its
    `stream`); run until idle, the tables changed, run again from the checkpoint: each view's
    changelog folds to its SQL answer over the tables as they then stand."""
    from kafka_helpers import produce
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka, create_topic
    from streamjoin.io.storage.kafka_client import BOOTSTRAP_ENV
    from streamjoin.runtime.pipeline import Pipeline

    path = CORPUS / "risingwave" / "03_pg_cdc_secret_kafka_tumble_join.sql"
    server = logical_postgres
    server.execute("DROP DATABASE IF EXISTS supply WITH (FORCE)")
    server.execute("CREATE DATABASE supply")
    server.execute(
        "CREATE TABLE vendor (id int PRIMARY KEY, name varchar, contact_email varchar, iban varchar, region varchar);"
        "CREATE TABLE invoices (i_invoicekey bigint PRIMARY KEY, i_vendorkey bigint, i_state varchar, i_amount numeric,"
        " i_issued date, i_priority varchar, i_clerk varchar, i_terms bigint, i_note varchar);"
        "INSERT INTO vendor VALUES (1, 'acme', 'a@x', 'NL01', 'north'), (2, 'bolt', 'b@x', 'DE02', 'south'),"
        " (3, 'core', 'c@x', 'FR03', 'north'), (4, 'dyna', 'd@x', 'ES04', 'east');"
        "UPDATE vendor SET name = 'bolt2', region = 'north' WHERE id = 2; DELETE FROM vendor WHERE id = 4;"
        "INSERT INTO invoices SELECT g, g % 3, 'open', g * 1.5, '2026-11-27', 'low', 'clerk', 30, NULL FROM generate_series(1, 7) g;"
        "DELETE FROM invoices WHERE i_invoicekey = 7", "supply")
    base = int(dt.datetime(2026, 11, 27, 10, 0, tzinfo=dt.UTC).timestamp())
    listings = [{"id": n, "title": f"t{n}", "listed_at": base + 4 * n, "vendor_id": n % 5, "aisle": 1} for n in range(12)]
    out = tmp_path / "out"
    with EmbeddedKafka(port=0, log_path=str(tmp_path / "tansu.log")) as broker:
        monkeypatch.setenv(BOOTSTRAP_ENV, broker.servers)
        create_topic(broker.servers, "listing", 1)
        produce(broker, "listing", listings)
        pipeline = Pipeline.from_sql(path.read_text(), path.name)
        assert [q.name for q in pipeline.script.runs] == ["region_vendors", "active_vendors", "invoices_rw_count"]
        run_and_stop(spark, pipeline, tmp_path / "checkpoint", out)
        server.execute("UPDATE vendor SET name = 'acme2' WHERE id = 1; DELETE FROM vendor WHERE id = 3;"
                       "INSERT INTO vendor VALUES (4, 'dyna', 'd@x', 'ES04', 'east');"
                       "INSERT INTO invoices VALUES (8, 1, 'open', 2, '2026-11-27', 'low', 'clerk', 30, NULL)", "supply")
        vendors = {1: ("acme2", "north"), 2: ("bolt2", "north"), 4: ("dyna", "east")}
        more = [{"id": n, "title": f"t{n}", "listed_at": base + 4 * n, "vendor_id": n % 5, "aisle": 1} for n in range(12, 16)]
        produce(broker, "listing", more)
        assert_finished(Pipeline.from_sql(path.read_text(), path.name).run(spark, tmp_path / "checkpoint", str(out), until_idle=True))
    views = rows_by_view(out)
    assert_columns([r for rows in views.values() for r in rows], pipeline)
    assert {name: folded(rows) for name, rows in views.items()} == vendors_answer(vendors, listings + more, 7), views


def test_risingwave_04_joins_a_kinesis_stream_with_an_s3_folder_into_its_three_views(spark, s3_server, tmp_path):
    """risingwave/04 unedited: a Kinesis source with every INCLUDE column and an S3 bucket source
    (both on the embedded server: AWS_ENDPOINT_URL); a regular join of two running aggregates
    (one over a LEFT JOIN), a filter on the Kinesis arrival time, and a join of TUMBLE groups
    with a TUMBLE window join. Each view folds to its SQL answer."""
    import boto3
    from streamjoin.io.sources import kinesis
    from streamjoin.runtime.pipeline import Pipeline

    path = CORPUS / "risingwave" / "04_kinesis_s3_include_joins.sql"
    client = kinesis.client()
    if "promo-view" in client.list_streams()["StreamNames"]:
        client.delete_stream(StreamName="promo-view")
    client.create_stream(StreamName="promo-view", ShardCount=1)
    s3 = boto3.client("s3", endpoint_url=s3_server.settings.endpoint_url)
    if "promo-click" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="promo-click")
    for item in s3.list_objects_v2(Bucket="promo-click").get("Contents", []):
        s3.delete_object(Bucket="promo-click", Key=item["Key"])
    start = dt.datetime(2026, 11, 27, 10, 0)
    views = [{"slot_id": n % 4 + 1, "promo_id": n % 3 + 1, "viewed_at": (start + dt.timedelta(seconds=50 * n)).isoformat(sep=" ")}
             for n in range(13)]
    clicks = [{"slot_id": n % 5 + 1, "clicked_at": (start + dt.timedelta(seconds=70 * n)).isoformat(sep=" ")} for n in range(8)]
    for row in views:
        client.put_record(StreamName="promo-view", Data=json.dumps(row).encode(), PartitionKey=str(row["slot_id"]))
    s3.put_object(Bucket="promo-click", Key="clicks.json", Body="".join(json.dumps(r) + "\n" for r in clicks).encode())
    pipeline = Pipeline.from_sql(path.read_text(), path.name)
    assert [q.name for q in pipeline.script.runs] == ["promo_ctr", "kinesis_arrival", "promo_ctr_5min"]
    assert_finished(pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True))
    out = rows_by_view(tmp_path / "out")
    assert_columns([r for rows in out.values() for r in rows], pipeline)
    views_per, clicks_per, windows_views, windows_clicks = Counter(), Counter(), Counter(), Counter()

    def end(text: str) -> str:
        t = dt.datetime.fromisoformat(text)
        return (t - dt.timedelta(minutes=t.minute % 5, seconds=t.second) + dt.timedelta(minutes=5)).strftime("%Y-%m-%d %H:%M:%S.000")

    for v in views:
        views_per[v["promo_id"]] += 1
        windows_views[(v["promo_id"], end(v["viewed_at"]))] += 1
    for c in clicks:
        partners = [v for v in views if v["slot_id"] == c["slot_id"]]
        clicks_per.update([v["promo_id"] for v in partners] or [None])  # a LEFT JOIN: no view, one row of NULL promo
        windows_clicks.update((v["promo_id"], end(v["viewed_at"])) for v in partners if end(v["viewed_at"]) == end(c["clicked_at"]))
    ctr = {(p, round(clicks_per[p] / n, 6)) for p, n in views_per.items() if clicks_per[p]}
    assert {(p, round(float(x), 6)) for p, x in folded(out["promo_ctr"])} == ctr
    assert len({r for r in ctr if r[1] != round(r[1])}) >= 1  # ratios with a fraction: NUMERIC kept it
    assert {(p, round(float(x), 6), w) for p, x, w in folded(out["promo_ctr_5min"])} == \
        {(p, round(windows_clicks[(p, w)] / n, 6), w) for (p, w), n in windows_views.items() if windows_clicks[(p, w)]}
    arrivals = folded(out["kinesis_arrival"])
    assert sum(arrivals.values()) == len(views), arrivals  # every record's arrival time, none NULL


@pytest.mark.postgres
def test_sqlstream_09_finds_the_minutes_whose_percentiles_differ_from_those_postgresql_computed(spark, tmp_path):
    """sqlstream/09 unedited but for its folder: a CSV foreign stream of vehicles (each row's
    arrival time in its `rowtime` column: s-Server stamps it as it reads), per-route and
    minute PERCENTILE_DISC / PERCENTILE_CONT over a promoted ROWTIME, LEFT JOINed with a JDBC
    foreign table (read from PostgreSQL, its columns from the catalog) of the percentiles
    PostgreSQL computed from the same rows; the program writes the minutes that disagree. With
    two of PostgreSQL's rows altered, it writes exactly those two."""
    import csv
    import random

    from pg_helpers import ensure_database, execute_on
    from streamjoin.runtime.pipeline import Pipeline

    path = CORPUS / "sqlstream" / "09_percentile_check_left_join_jdbc_table.sql"
    ensure_database("pctcheck")
    rng = random.Random(9)
    start = dt.datetime(2026, 11, 27, 10, 0)
    rows = []
    for n in range(90):
        seen = start + dt.timedelta(seconds=2 * n)
        velocity = None if n % 11 == 0 else round(rng.uniform(0, 60), 1)
        rows.append({"rowtime": seen.isoformat(sep=" "), "unit": n % 7, "seen_at": seen.isoformat(sep=" "), "lat": 52.0, "lon": 4.0, "velocity": velocity,
                     "heading": 90, "route": rng.choice(["r1", "r2", "r3"])})
    folder = tmp_path / "vehicles"
    folder.mkdir()
    with (folder / "vehicles.narrow.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    db = {"host": "127.0.0.1", "port": 5432, "user": "checker", "password": "checkerpw", "dbname": "pctcheck"}
    values = ", ".join(f"('{r['route']}', '{r['seen_at']}', {r['velocity'] if r['velocity'] is not None else 'NULL'})" for r in rows)
    execute_on(db, "TRUNCATE expected_percentiles; "
               f"WITH v (route, seen_at, velocity) AS (VALUES {values}) "
               "INSERT INTO expected_percentiles SELECT route, date_trunc('minute', seen_at::timestamp), count(*), "
               + ", ".join(f"percentile_{k}({p}) WITHIN GROUP (ORDER BY velocity)" for k in ("disc", "cont") for p in (0.25, 0.5, 0.75))
               + ", array_agg(velocity) FROM v WHERE velocity IS NOT NULL GROUP BY 1, 2; "
               "UPDATE expected_percentiles SET pg_pctc_50 = pg_pctc_50 + 1 WHERE route = 'r1' AND rt = '2026-11-27 10:01:00'; "
               "UPDATE expected_percentiles SET pg_count = pg_count + 1 WHERE route = 'r2' AND rt = '2026-11-27 10:02:00'")
    assert execute_on(db, "SELECT count(*) FROM expected_percentiles", fetch=True)[0][0] == 9
    sql = path.read_text().replace("'/srv/pctcheck/test'", f"'{folder}'")
    pipeline = Pipeline.from_sql(sql, path.name)
    out = tmp_path / "out"
    assert_finished(pipeline.run(spark, tmp_path / "checkpoint", str(out), until_idle=True))
    written = [json.loads(line) for part in sorted(out.rglob("part-*.jsonl")) for line in part.read_text().splitlines()]
    assert_columns(written, pipeline)
    assert sorted((r["route"], r["seen_at"], r["mc50"], r["mcnt"]) for r in written) == [
        ("r1", "2026-11-27 10:01:00.000", False, True), ("r2", "2026-11-27 10:02:00.000", True, False)]
