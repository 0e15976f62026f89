"""Kafka topics as a stream input (connector 'kafka', io.sources.kafka), against a real broker process (the
embedded Tansu, io.storage.kafka_broker; never a mock): records staged like file rows, exactly once across
a restart and a SIGKILL, partitions of different speeds merged by rowtime so that none makes
another's rows late, each dialect's declaration form, bad records and an unreachable broker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from kafka_helpers import produce, read_topic
from runtime_helpers import read_output, run_in_two_parts, run_to_end, start, streamjoin, ts
from streamjoin.io.formats.types import arrow_schema
from streamjoin.io.sources.staging import InputSpec, Stager
from streamjoin.io.storage.kafka_broker import create_topic
from streamjoin.plan.model import Column

D = "2024-01-01 "
ORDERS = [(D + "10:00:00", 100), (D + "10:10:00", 101), (D + "10:20:00", 102), (D + "10:25:00", 103), (D + "10:40:00", 104)]
SHIPMENTS = [(D + "10:30:00", 101), (D + "10:45:00", 100), (D + "10:55:00", 103), (D + "11:05:00", 103), (D + "11:30:00", 104)]
# SEMANTICS §3's seed: each shipment with the orders of the hour before it, as the reference gives them
SEED_ROWS = [(D + "10:30:00.000", 101, D + "10:10:00.000"), (D + "10:45:00.000", 100, D + "10:00:00.000"),
             (D + "10:55:00.000", 103, D + "10:25:00.000"), (D + "11:05:00.000", 103, D + "10:25:00.000"),
             (D + "11:30:00.000", 104, D + "10:40:00.000")]


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_seed_join_reads_two_topics_filled_by_kafka_put_and_gives_the_reference_rows(kafka_broker, kafka_topic, tmp_path):
    orders, shipments = f"{kafka_topic}-orders", f"{kafka_topic}-shipments"
    put = streamjoin("kafka", "put", orders, jsonl(tmp_path / "o.jsonl", [{"rowtime": t, "orderId": i} for t, i in ORDERS]),
                     "--key", "orderId", "--create", "2", timeout=120)
    assert put.returncode == 0 and put.stderr.strip() == f"streamjoin: put 5 records into {orders}", put.stderr
    assert streamjoin("kafka", "put", shipments, jsonl(tmp_path / "s.jsonl", [{"rowtime": t, "orderId": i} for t, i in SHIPMENTS]),
                      "--create", "1", timeout=120).returncode == 0
    sql = tmp_path / "q.sql"
    sql.write_text(f"""CREATE STREAM orders (orderId INT) WITH (connector = 'kafka', topic = '{orders}');
CREATE STREAM shipments (orderId INT) WITH (connector = 'kafka', topic = '{shipments}');
SELECT STREAM ROWTIME, o.orderId, o.ROWTIME AS orderTime FROM shipments AS s
JOIN orders OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o.orderId = s.orderId;""")
    result = streamjoin("run", sql, "--until-idle")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["rowtime"], r["orderid"], r["ordertime"]) for r in rows] == SEED_ROWS


def test_a_risingwave_program_as_written_reads_its_kafka_sources_with_include_columns_through_the_bootstrap_override(
        kafka_broker, kafka_topic, tmp_path):
    """The program names its own broker (`message_queue:29092`, which does not resolve here);
    STREAMJOIN_KAFKA_BOOTSTRAP points it at ours. INCLUDE columns come from each record."""
    bids, asks = f"{kafka_topic}-bids", f"{kafka_topic}-asks"
    for topic in (bids, asks):
        create_topic(kafka_broker.servers, topic, 1)
    producer = Producer({"bootstrap.servers": kafka_broker.servers})
    for row in ({"id": 1, "ts": D + "10:00:01", "px": 10.5}, {"id": 2, "ts": D + "10:00:09", "px": 11.0}):
        producer.produce(bids, value=json.dumps(row).encode(), key=b'"desk-a"', headers=[("trace", f"t-{row['id']}".encode())])
    assert producer.flush(30) == 0
    produce(kafka_broker, asks, [{"id": 1, "ts": D + "10:00:03", "px": 10.7}, {"id": 2, "ts": D + "10:00:30", "px": 11.2},
                                 {"id": 3, "ts": D + "10:01:00", "px": 9.0}])
    sql = tmp_path / "rw.sql"
    sql.write_text(f"""
CREATE SOURCE bids (id INT, ts TIMESTAMP, px DOUBLE PRECISION, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
INCLUDE key AS desk INCLUDE partition AS part INCLUDE offset AS off INCLUDE header 'trace' VARCHAR AS trace
WITH (connector = 'kafka', topic = '{bids}', properties.bootstrap.server = 'message_queue:29092',
      scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE asks (id INT, ts TIMESTAMP, px DOUBLE PRECISION, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH (connector = 'kafka', topic = '{asks}', properties.bootstrap.server = 'message_queue:29092') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW spreads AS
SELECT b.id, b.desk, b.part, b.off, b.trace, a.px - b.px AS spread FROM bids b JOIN asks a
  ON b.id = a.id AND a.ts BETWEEN b.ts - INTERVAL '10' SECOND AND b.ts + INTERVAL '10' SECOND;""")
    result = streamjoin("run", sql, "--dialect", "risingwave", "--until-idle")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["id"], r["desk"], r["part"], r["off"], r["trace"], round(r["spread"], 3)) for r in rows] == [
        (1, "desk-a", "0", "0", "t-1", 0.2)]


def test_a_restart_from_the_checkpoint_reads_each_record_once_with_no_gap(spark, kafka_broker, kafka_topic, tmp_path):
    create_topic(kafka_broker.servers, kafka_topic, 2)
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000), "k": t} for t in range(0, 3)], partition=0)
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000 + 500), "k": 10 + t} for t in range(0, 3)], partition=1)
    sql = f"CREATE STREAM s (k INT) WITH (connector = 'kafka', topic = '{kafka_topic}');\nSELECT STREAM ROWTIME, k FROM s;"

    def more():
        produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000), "k": t} for t in range(3, 6)], partition=0)
        produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000 + 500), "k": 10 + t} for t in range(3, 6)], partition=1)

    run_in_two_parts(spark, sql, tmp_path, more)
    rows = read_output(tmp_path / "out")
    assert [r["k"] for r in rows] == [0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15]  # merged by rowtime, each once


def spec(tmp_path: Path, topic: str, servers: str, **options) -> InputSpec:
    columns = (Column("k", "INT"), Column("rowtime", "TIMESTAMP"))
    kafka = {"topic": topic, "bootstrap": servers, "start": "earliest", "start_timestamp_us": None, "idle_ms": 60_000,
             "broker_timeout_ms": 10_000, "fills": {}, **options}
    return InputSpec(alias="s", path=f"kafka://{topic}", format="json", schema=arrow_schema(columns), rowtime="rowtime",
                     lateness_ms=0, state_dir=str(tmp_path / "state"), late_dir=str(tmp_path / "late"), kafka=kafka)


def advance_until(stager: Stager, want: list[int], timeout_s: float = 30) -> None:
    """Staging passes until the staged keys are `want` (then the caller's assertion holds), or the
    timeout: a pass takes what the broker returns within its short read, which a loaded machine's
    first fetch can leave empty (the next pass reads it). Rows that must wait are still checked:
    staged too early, they never make the keys `want`."""
    deadline = time.time() + timeout_s
    stager.advance()
    while staged(stager) != want and time.time() < deadline:
        time.sleep(0.3)
        stager.advance()


def staged(stager: Stager) -> list[int]:
    steps = sorted(stager.steps_dir.glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(p) for p in steps]) if steps else None
    return [] if table is None else [k for k in table.column("k").to_pylist() if k is not None]


def test_a_fast_partition_does_not_make_a_slow_partitions_rows_late_the_clock_is_the_slowest_partitions(
        kafka_broker, kafka_topic, tmp_path):
    create_topic(kafka_broker.servers, kafka_topic, 2)
    stager = Stager(spec(tmp_path, kafka_topic, kafka_broker.servers))
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000), "k": t} for t in (10, 11, 12, 20)], partition=0)  # fast
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000), "k": t} for t in (1, 2)], partition=1)  # slow
    advance_until(stager, [1, 2])
    assert staged(stager) == [1, 2]  # the fast partition's rows wait for the slow one
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000), "k": t} for t in (3, 15)], partition=1)
    advance_until(stager, [1, 2, 3, 10, 11, 12, 15])
    assert staged(stager) == [1, 2, 3, 10, 11, 12, 15]
    again = Stager(spec(tmp_path, kafka_topic, kafka_broker.servers))  # a restart: 20 was held, never staged
    (again.dir / "END").touch()
    again.advance()
    m = again.manifest()
    assert staged(again) == [1, 2, 3, 10, 11, 12, 15, 20] and m.late_rows == 0 and m.rows == 8
    assert m.shards["0"]["seq"] == "3" and m.shards["1"]["seq"] == "3"  # the offsets of the last staged records


def test_a_partition_added_to_the_topic_is_read_from_its_beginning(kafka_broker, kafka_topic, tmp_path, monkeypatch):
    """Tansu cannot add partitions to a topic (CreatePartitions): the topic has two from the start
    and the first listing shows one of them, as a broker's metadata would before the second was added."""
    create_topic(kafka_broker.servers, kafka_topic, 2)
    stager = Stager(spec(tmp_path, kafka_topic, kafka_broker.servers, start="latest"))
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(1000), "k": 1}])  # before the first start: not read (latest)
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(1500), "k": 15}], partition=1)  # in the partition "added" later
    from streamjoin.io.sources import kafka

    real = kafka.consumer

    def one_partition_first(servers, errors=None):
        client = real(servers, errors)
        listed = {"times": 0}

        class Seen:  # the real consumer, whose first topic listing lacks partition 1
            def __getattr__(self, name):
                return getattr(client, name)

            def list_topics(self, topic=None, timeout=-1):
                metadata = client.list_topics(topic, timeout=timeout)
                listed["times"] += 1
                if listed["times"] == 1:
                    metadata.topics[kafka_topic].partitions.pop(1)
                return metadata

        return Seen()

    monkeypatch.setattr(kafka, "consumer", one_partition_first)
    stager.advance()
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(2000), "k": 2}])
    (stager.dir / "END").touch()
    stager.advance()
    assert sorted(staged(stager)) == [2, 15]


def test_start_latest_is_fixed_at_the_first_start_and_a_timestamp_start_skips_older_records(kafka_broker, kafka_topic, tmp_path):
    create_topic(kafka_broker.servers, kafka_topic, 1)
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(1000), "k": 1}], timestamp_ms=1_700_000_000_000)
    first = Stager(spec(tmp_path / "latest", kafka_topic, kafka_broker.servers, start="latest"))
    first.advance()  # nothing new: the end offsets are kept anyway, so a restart does not skip what came meanwhile
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(2000), "k": 2}], timestamp_ms=1_700_000_100_000)
    again = Stager(spec(tmp_path / "latest", kafka_topic, kafka_broker.servers, start="latest"))
    (again.dir / "END").touch()
    again.advance()
    assert staged(again) == [2]
    at = Stager(spec(tmp_path / "at", kafka_topic, kafka_broker.servers, start="timestamp",
                     start_timestamp_us=1_700_000_050_000_000))
    (at.dir / "END").touch()
    at.advance()
    assert staged(at) == [2]


def test_an_implicit_rowtime_is_the_records_timestamp_when_the_value_holds_none(spark, kafka_broker, kafka_topic, tmp_path):
    create_topic(kafka_broker.servers, kafka_topic, 1)
    produce(kafka_broker, kafka_topic, [{"k": 1}], timestamp_ms=1_704_103_200_000)  # 2024-01-01 10:00:00 UTC
    produce(kafka_broker, kafka_topic, [{"k": 2, "rowtime": D + "10:00:05"}], timestamp_ms=1_704_103_299_000)
    sql = f"CREATE STREAM s (k INT) WITH (connector = 'kafka', topic = '{kafka_topic}');\nSELECT STREAM ROWTIME, k FROM s;"
    run_to_end(start(spark, sql, tmp_path, until_idle=True))
    assert [(r["rowtime"], r["k"]) for r in read_output(tmp_path / "out")] == [(D + "10:00:00.000", 1), (D + "10:00:05.000", 2)]


def test_malformed_records_are_dead_letters_naming_partition_and_offset_and_the_good_ones_run(spark, kafka_broker, kafka_topic, tmp_path):
    create_topic(kafka_broker.servers, kafka_topic, 2)
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(1_000), "k": 1}, b"not json",
                                        {"rowtime": ts(2_000), "k": "two"}, {"rowtime": ts(3_000), "k": 3}], partition=1)
    sql = f"CREATE STREAM s (k INT) WITH (connector = 'kafka', topic = '{kafka_topic}');\nSELECT STREAM k FROM s;"
    status = run_to_end(start(spark, sql, tmp_path, until_idle=True))
    assert [r["k"] for r in read_output(tmp_path / "out")] == [1, 3]
    assert status["inputs"]["s"]["rejected_rows"] == 2 and status["inputs"]["s"]["rows_read"] == 2
    letters = [json.loads(line) for f in sorted((tmp_path / "out" / "rejected" / "s").glob("*.jsonl"))
               for line in f.read_text().splitlines()]
    assert sorted((r["source"], r["sequence"], r["raw"]) for r in letters) == [
        (f"kafka://{kafka_topic}/1", "1", "not json"),
        (f"kafka://{kafka_topic}/1", "2", json.dumps({"rowtime": ts(2_000), "k": "two"}))]


def test_a_malformed_record_fails_the_query_with_its_partition_and_offset_when_on_error_is_fail(spark, kafka_broker, kafka_topic, tmp_path):
    create_topic(kafka_broker.servers, kafka_topic, 1)
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(1_000), "k": 1}, b"[1, 2]"])
    sql = (f"CREATE STREAM s (k INT) WITH (connector = 'kafka', topic = '{kafka_topic}', on_error = 'fail');\n"
           "SELECT STREAM k FROM s;")
    with pytest.raises(Exception, match=f"kafka://{kafka_topic}/0: the record at offset 1 is not a JSON object"):
        run_to_end(start(spark, sql, tmp_path, until_idle=True))


def test_a_broker_that_does_not_answer_is_asked_again_and_then_the_run_fails_naming_it(tmp_path):
    sql = tmp_path / "q.sql"
    sql.write_text("CREATE STREAM s (k INT) WITH (connector = 'kafka', topic = 't', broker_timeout = '3 SECONDS');\n"
                   "SELECT STREAM k FROM s;")
    result = subprocess.run([sys.executable, "-m", "streamjoin.cli", "run", str(sql), "--until-idle"], capture_output=True,
                            text=True, timeout=300, env={**os.environ, "STREAMJOIN_KAFKA_BOOTSTRAP": "127.0.0.1:1"})
    assert result.returncode == 1, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("streamjoin: BrokerUnavailableError: kafka 127.0.0.1:1 (topic 't'): could not list the "
                           "topic's partitions for 3 s"), last
    assert "asking again" in result.stderr and "%3|" not in result.stderr  # librdkafka's own lines stay quiet


@pytest.mark.parametrize(("options", "message"), [
    ("connector = 'kafka', start = 'oldest'", "start 'oldest' is not earliest, latest or a timestamp"),
    ("connector = 'kafka', scan.startup.mode = 'timestamp'", "needs scan.startup.timestamp.millis"),
    ("connector = 'kafka', format = 'csv'", "a Kafka record's value is read as JSON"),
])
def test_bad_kafka_options_are_rejected_before_anything_runs(tmp_path, options, message):
    sql = tmp_path / "q.sql"
    sql.write_text(f"CREATE STREAM s (k INT) WITH ({options});\nSELECT STREAM k FROM s;")
    result = streamjoin("run", sql, "--until-idle", timeout=120)
    assert result.returncode == 2 and message in result.stderr, result.stderr


# both in `make test-long` (43 s of `make test`, which was 29.7 min on a fresh clone on 2026-11-29): `make test`
# has the restart from a checkpoint (each record once, no gap) and a crash inside a release to a topic, below
@pytest.mark.parametrize("into", [pytest.param("folder", marks=pytest.mark.long), pytest.param("topic", marks=pytest.mark.long)])
def test_a_run_killed_in_the_middle_and_started_again_loses_and_doubles_no_row(kafka_broker, kafka_topic, tmp_path, into):
    """`streamjoin run` reads two topics while records arrive; SIGKILL to its whole process group
    (driver and JVM) mid-run; the same checkpoint run to the end gives each join row once, in an
    output folder or in an output topic (io.sinks.kafka_sink's release record)."""
    left, right, out = f"{kafka_topic}-l", f"{kafka_topic}-r", f"{kafka_topic}-out"
    create_topic(kafka_broker.servers, left, 2)
    create_topic(kafka_broker.servers, right, 1)
    sql = tmp_path / "q.sql"
    sql.write_text(f"""CREATE STREAM l (k INT) WITH (connector = 'kafka', topic = '{left}', idle_timeout = '1 SECOND');
CREATE STREAM r (k INT) WITH (connector = 'kafka', topic = '{right}', idle_timeout = '1 SECOND');
SELECT STREAM l.ROWTIME AS lt, l.k FROM l JOIN r OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS r ON l.k = r.k;""")
    output = str(tmp_path / "out") if into == "folder" else f"kafka://{out}?key=k"
    args = [sys.executable, "-m", "streamjoin.cli", "run", str(sql), "--output", output,
            "--checkpoint", str(tmp_path / "checkpoint")]

    def committed() -> list[dict]:
        if into == "folder":
            return read_output(tmp_path / "out")
        return [value for _, value, _ in read_topic(kafka_broker.servers, out)]

    def batch(i: int) -> None:  # 20 keys a second, each right row 500 ms before its left row
        produce(kafka_broker, right, [{"rowtime": ts(i * 1000 + n * 10), "k": i * 100 + n} for n in range(20)])
        for p in (0, 1):
            produce(kafka_broker, left, [{"rowtime": ts(i * 1000 + 500 + n * 10), "k": i * 100 + n}
                                         for n in range(20) if n % 2 == p], partition=p)

    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        for i in range(6):
            batch(i)
            time.sleep(0.7)
        deadline = time.time() + 180
        while not committed() and time.time() < deadline:
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            time.sleep(0.5)
        batch(6)  # read or held or not yet read when the kill comes
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert 0 < len(committed()) < 7 * 20, "the first process committed nothing, or everything, before the kill"
    for i in range(7, 12):
        batch(i)
    result = subprocess.run([*args, "--until-idle"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(r["k"] for r in committed()) == [i * 100 + n for i in range(12) for n in range(20)]


LENSES_SEED = """SET defaults.topic.autocreate=true;
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH ordersStream AS (SELECT STREAM * FROM orders);

INSERT INTO result
SELECT STREAM
    customersTable.name
    , ordersStream.item
 FROM
    ordersStream {join} customersTable
        ON customersTable.id = ordersStream.customer_id;
"""


@pytest.fixture
def lenses_topics(tmp_path):
    """A broker of the test's own holding the Lenses seed's topics as its tables show them (keyed
    records, `customers` and `orders`: the names the seed's SQL uses)."""
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka

    with EmbeddedKafka(port=0, log_path=str(tmp_path / "tansu.log")) as broker:
        for topic in ("customers", "orders"):
            create_topic(broker.servers, topic, 1)
        base = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC: the customers first, then the orders
        for key, row in ((1, {"id": 1, "name": "John"}), (2, {"id": 2, "name": "Frank"})):
            produce(broker, "customers", [row], key=str(key).encode(), timestamp_ms=base)
        for key, row in ((1, {"customer_id": 1, "item": "Computer"}), (2, {"customer_id": 1, "item": "Mouse"}),
                         (3, {"customer_id": 3, "item": "Keyboard"})):
            produce(broker, "orders", [row], key=str(key).encode(), timestamp_ms=base + 1000 * key)
        yield broker


@pytest.mark.parametrize(("join", "expected"), [
    # the inner join's rows are the LEFT JOIN's but its NULL-extended one: make test-long
    pytest.param("JOIN", [("John", "Computer"), ("John", "Mouse")], marks=pytest.mark.long),
    ("LEFT JOIN", [("John", "Computer"), ("John", "Mouse"), (None, "Keyboard")]),
])
def test_the_lenses_seed_joins_run_as_written_on_topics_named_and_not_declared(lenses_topics, tmp_path, join, expected):
    sql = tmp_path / "lenses.sql"
    sql.write_text(LENSES_SEED.format(join=join))
    env = {**os.environ, "STREAMJOIN_KAFKA_BOOTSTRAP": lenses_topics.servers}
    check = subprocess.run([sys.executable, "-m", "streamjoin.cli", "check", str(sql)], capture_output=True, text=True,
                           timeout=120, env=env)
    assert check.returncode == 0 and "dialect lenses" in check.stderr, check.stderr
    result = subprocess.run([sys.executable, "-m", "streamjoin.cli", "run", str(sql), "--until-idle"], capture_output=True,
                            text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [(r["name"], r["item"]) for r in map(json.loads, result.stdout.splitlines())] == expected


def test_a_lenses_topic_that_is_not_there_is_refused_at_its_name_saying_why(kafka_broker, tmp_path):
    sql = tmp_path / "lenses.sql"
    sql.write_text("SET defaults.topic.autocreate=true;\nINSERT INTO out SELECT STREAM * FROM nowhere_topic;")
    result = streamjoin("check", sql, timeout=120)
    assert result.returncode == 2
    assert (f"unknown stream or table 'nowhere_topic', and no topic to read it from: the broker {kafka_broker.servers} "
            "has no topic 'nowhere_topic'") in result.stderr, result.stderr


def test_run_writes_the_seed_joins_rows_into_a_topic_keyed_and_marked_with_their_release(kafka_broker, kafka_topic, tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "s").mkdir()
    jsonl(tmp_path / "o" / "1.json", [{"rowtime": t, "orderId": i} for t, i in ORDERS])
    jsonl(tmp_path / "s" / "1.json", [{"rowtime": t, "orderId": i} for t, i in SHIPMENTS])
    sql = tmp_path / "q.sql"
    sql.write_text(f"""CREATE STREAM orders (orderId INT) WITH (connector = 'files', path = '{tmp_path / "o"}');
CREATE STREAM shipments (orderId INT) WITH (connector = 'files', path = '{tmp_path / "s"}');
SELECT STREAM ROWTIME, o.orderId, o.ROWTIME AS orderTime FROM shipments AS s
JOIN orders OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o.orderId = s.orderId;""")
    out = f"{kafka_topic}-out"
    result = streamjoin("run", sql, "--until-idle", "--output", f"kafka://{out}?key=orderid", "--checkpoint", tmp_path / "cp")
    assert result.returncode == 0, result.stderr[-3000:]
    records = sorted(read_topic(kafka_broker.servers, out), key=lambda r: int(r[2]["streamjoin.row"]))  # partitions apart
    assert [(r["rowtime"], r["orderid"], r["ordertime"]) for _, r, _ in records] == SEED_ROWS
    assert [k for k, _, _ in records] == [str(r[1]).encode() for r in SEED_ROWS]
    assert [(h["streamjoin.release"], h["streamjoin.row"]) for _, _, h in records] == [
        (b"part-00000000", str(n).encode()) for n in range(5)]


def test_a_release_cut_short_by_a_crash_is_completed_without_doubles_and_a_done_one_is_not_sent_again(
        kafka_broker, kafka_topic, tmp_path, monkeypatch):
    from streamjoin.io.sinks import kafka_sink

    rows = pa.table({"k": list(range(6)), "v": [f"row {n}" for n in range(6)]})
    first = kafka_sink.TopicWriter(f"kafka://{kafka_topic}?key=k", tmp_path / "state")
    first.write_table("part-00000000", rows.slice(0, 2))
    first.producer = _Dying(first.producer, after=3)
    with pytest.raises(SystemExit):
        first.write_table("part-00000001", rows)
    again = kafka_sink.TopicWriter(f"kafka://{kafka_topic}?key=k", tmp_path / "state")  # the restart
    again.write_table("part-00000000", rows.slice(0, 2))  # replayed, done before the crash: not sent
    again.write_table("part-00000001", rows)  # replayed: only the rows that did not get out
    again.write_table("part-00000002", rows.slice(5, 1))
    records = read_topic(kafka_broker.servers, kafka_topic)
    releases = [(h["streamjoin.release"].decode(), int(h["streamjoin.row"]), r["k"]) for _, r, h in records]
    assert sorted(releases) == [("part-00000000", 0, 0), ("part-00000000", 1, 1)] + [
        ("part-00000001", n, n) for n in range(6)] + [("part-00000002", 0, 5)]


class _Dying:
    """A producer whose process dies (SystemExit) after `after` records went out, flushed."""

    def __init__(self, producer, after: int):
        self.producer, self.after, self.sent = producer, after, 0

    def produce(self, *args, **kwargs):
        if self.sent == self.after:
            self.producer.flush(10)
            raise SystemExit("killed")
        self.sent += 1
        return self.producer.produce(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.producer, name)


def test_a_risingwave_kafka_sink_receives_the_joins_rows_keyed_by_its_primary_key(kafka_broker, kafka_topic, tmp_path):
    left, right, out = f"{kafka_topic}-l", f"{kafka_topic}-r", f"{kafka_topic}-out"
    for topic in (left, right):
        create_topic(kafka_broker.servers, topic, 1)
    produce(kafka_broker, left, [{"id": 1, "ts": D + "10:00:00", "a": "x"}, {"id": 2, "ts": D + "10:00:05", "a": "y"}])
    produce(kafka_broker, right, [{"id": 1, "ts": D + "10:00:02", "b": 7}, {"id": 2, "ts": D + "10:05:00", "b": 8}])
    sql = tmp_path / "rw.sql"
    sql.write_text(f"""
CREATE SOURCE l (id INT, ts TIMESTAMP, a VARCHAR, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'kafka', topic = '{left}', properties.bootstrap.server = 'kafka:9092') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE r (id INT, ts TIMESTAMP, b INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'kafka', topic = '{right}', properties.bootstrap.server = 'kafka:9092') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW pairs AS
SELECT l.id, l.a, r.b FROM l JOIN r ON l.id = r.id AND r.ts BETWEEN l.ts AND l.ts + INTERVAL '1' MINUTE;
CREATE SINK pairs_out FROM pairs WITH (connector = 'kafka', topic = '{out}', properties.bootstrap.server = 'kafka:9092',
  primary_key = 'id') FORMAT PLAIN ENCODE JSON (force_append_only = 'true');""")
    result = streamjoin("run", sql, "--dialect", "risingwave", "--until-idle", "--checkpoint", tmp_path / "cp")
    assert result.returncode == 0, result.stderr[-3000:]
    assert [(k, r) for k, r, _ in read_topic(kafka_broker.servers, out)] == [(b"1", {"id": 1, "a": "x", "b": 7})]


@pytest.mark.parametrize("changelog", ["DEBEZIUM", "UPSERT"])
def test_a_table_fed_by_a_topics_changes_joins_a_stream_and_folds_to_the_join_with_its_last_rows(
        spark, kafka_broker, kafka_topic, tmp_path, changelog):
    """FORMAT DEBEZIUM: change events; FORMAT UPSERT: rows keyed by the record's key, a record
    without a value deletes its key's row. Either way the view's changelog folds to the join of
    the orders with the customers as they are at the end."""
    from collections import Counter

    from streamjoin.runtime.pipeline import Pipeline

    orders, customers = f"{kafka_topic}-orders", f"{kafka_topic}-customers"
    for topic in (orders, customers):
        create_topic(kafka_broker.servers, topic, 1)
    changes = [("c", 1, "ann"), ("c", 2, "bob"), ("u", 1, "ann2"), ("d", 2, "bob"), ("c", 3, "cy")]
    for op, key, name in changes:
        row = {"id": key, "name": name}
        if changelog == "DEBEZIUM":
            event = {"op": op, "before": row if op in ("u", "d") else None, "after": None if op == "d" else row}
            produce(kafka_broker, customers, [{"payload": event}])
        else:
            produce(kafka_broker, customers, [None if op == "d" else row], key=json.dumps({"id": key}).encode())
    produce(kafka_broker, orders, [{"oid": 10, "cust": 1}, {"oid": 11, "cust": 2}, {"oid": 12, "cust": 3}])
    sql = f"""
    CREATE SOURCE orders (oid INT, cust INT) WITH (connector = 'kafka', topic = '{orders}') FORMAT PLAIN ENCODE JSON;
    CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR)
      WITH (connector = 'kafka', topic = '{customers}') FORMAT {changelog} ENCODE JSON;
    CREATE MATERIALIZED VIEW named AS
      SELECT o.oid, c.id, c.name FROM orders AS o LEFT JOIN customers AS c ON o.cust = c.id;"""
    runner = Pipeline.from_sql(sql, "rw.sql").runner(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    status = run_to_end(runner.start())
    content = Counter()
    for r in read_output(tmp_path / "out"):
        content[(r["oid"], r["id"], r["name"])] += 1 if r["op"] == "+I" else -1
    assert +content == Counter({(10, 1, "ann2"): 1, (11, None, None): 1, (12, 3, "cy"): 1}), read_output(tmp_path / "out")
    assert status["rejected_rows"] == 0


def test_an_s_server_program_reads_kafka10_foreign_streams_and_its_pump_writes_a_kafka_foreign_stream(
        kafka_broker, kafka_topic, tmp_path):
    """s-Server's own form: foreign streams on KAFKA10_SERVER (TOPIC, SEED_BROKERS naming a broker
    that is not here, STARTING_TIME), a pump INSERT INTO a Kafka foreign stream: the output topic."""
    orders, shipments, matched = f"{kafka_topic}-orders", f"{kafka_topic}-shipments", f"{kafka_topic}-matched"
    for topic in (orders, shipments):
        create_topic(kafka_broker.servers, topic, 1)
    produce(kafka_broker, orders, [{"ROWTIME": t, "orderId": i} for t, i in ORDERS])
    produce(kafka_broker, shipments, [{"ROWTIME": t, "orderId": i} for t, i in SHIPMENTS])
    options = "\"SEED_BROKERS\" 'kafka.example.net:9092', \"STARTING_TIME\" 'EARLIEST', \"PARSER\" 'JSON'"
    sql = tmp_path / "s.sql"
    sql.write_text(f"""CREATE OR REPLACE SCHEMA "demo";
SET SCHEMA '"demo"';
CREATE OR REPLACE FOREIGN STREAM "orders" ("orderId" INTEGER)
    SERVER "KAFKA10_SERVER" OPTIONS ("TOPIC" '{orders}', {options});
CREATE OR REPLACE FOREIGN STREAM "shipments" ("orderId" INTEGER)
    SERVER "KAFKA10_SERVER" OPTIONS ("TOPIC" '{shipments}', {options});
CREATE OR REPLACE FOREIGN STREAM "matched" ("shipTime" TIMESTAMP, "orderId" INTEGER, "orderTime" TIMESTAMP)
    SERVER "KAFKA10_SERVER" OPTIONS ("TOPIC" '{matched}', "SEED_BROKERS" 'kafka.example.net:9092', "FORMATTER" 'JSON');
CREATE OR REPLACE PUMP "match_pump" STOPPED AS
INSERT INTO "matched"
SELECT STREAM s.ROWTIME AS "shipTime", o."orderId", o.ROWTIME AS "orderTime"
FROM "shipments" AS s JOIN "orders" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o."orderId" = s."orderId";
ALTER PUMP "match_pump" START;
""")
    result = streamjoin("run", sql, "--until-idle", "--checkpoint", tmp_path / "cp")
    assert result.returncode == 0, result.stderr[-3000:]
    records = sorted(read_topic(kafka_broker.servers, matched), key=lambda r: int(r[2]["streamjoin.row"]))
    assert [(r["shipTime"], r["orderId"], r["orderTime"]) for _, r, _ in records] == SEED_ROWS


def test_the_embedded_broker_keeps_its_topics_on_the_embedded_s3_across_a_restart(s3_server, tmp_path):
    """`kafka serve --storage s3://BUCKET/`: Tansu's S3 storage, on the embedded S3 (the AWS_*
    variables `s3 serve` prints), so the topics outlive the broker."""
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka, put

    storage = f"s3://streamjoin/kept-{time.time_ns()}/"  # the broker's own prefix in the session's bucket
    broker = EmbeddedKafka(port=0, storage=storage, log_path=str(tmp_path / "tansu.log"))
    broker.start()
    try:
        assert put("kept", [b'{"a": 1}', b'{"a": 2}'], partitions=1, servers=broker.servers) == 2
    finally:
        broker.stop()
    again = EmbeddedKafka(port=broker.port, storage=storage, log_path=str(tmp_path / "tansu.log"))
    again.start()
    try:
        assert [value for _, value, _ in read_topic(again.servers, "kept")] == [{"a": 1}, {"a": 2}]
    finally:
        again.stop()


def test_a_lenses_program_reads_a_topics_value_meta_and_key_facets(kafka_broker, kafka_topic, tmp_path):
    """A topic whose values are plain numbers is read as `_value`; `_meta.partition`,
    `_meta.offset` and `_meta.timestamp` (epoch milliseconds) and `_key` are each record's."""
    topic = kafka_topic.replace("-", "_")  # a plain name (t-44e5... would read as t minus a number)
    create_topic(kafka_broker.servers, topic, 1)
    producer = Producer({"bootstrap.servers": kafka_broker.servers})
    for n, value in enumerate((12.5, 30.0)):
        producer.produce(topic, value=json.dumps(value).encode(), key=f'"k{n}"'.encode(), timestamp=1_704_067_200_000 + n)
    assert producer.flush(30) == 0
    sql = tmp_path / "lenses.sql"
    sql.write_text(f"SET defaults.topic.autocreate=true;\nINSERT INTO out SELECT STREAM _key AS k, _value AS v, "
                   f"_meta.partition AS p, _meta.offset AS o, _meta.timestamp AS t FROM {topic};")
    result = streamjoin("run", sql, "--until-idle", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"k": "k0", "v": 12.5, "p": 0, "o": 0, "t": 1_704_067_200_000}, {"k": "k1", "v": 30.0, "p": 0, "o": 1, "t": 1_704_067_200_001}]


def test_a_broker_that_goes_away_and_comes_back_within_the_timeout_loses_and_doubles_nothing(s3_server, tmp_path, caplog):
    """The broker stops between two polls (its topics kept on the embedded S3) and starts again
    five seconds later, and a record arrives: the poll meanwhile asks again (a warning each time)
    and goes on where it was, reading each record once."""
    import logging
    import threading

    from streamjoin.io.storage.kafka_broker import EmbeddedKafka

    storage = f"s3://streamjoin/outage-{time.time_ns()}/"
    broker = EmbeddedKafka(port=0, storage=storage, log_path=str(tmp_path / "tansu.log"))
    broker.start()
    create_topic(broker.servers, "events", 1)
    produce(broker, "events", [{"rowtime": ts(t * 1000), "k": t} for t in (1, 2)])
    # broker_timeout 20 s: each request waits 5 s, so the 5-second outage fails one or two of them
    stager = Stager(spec(tmp_path, "events", broker.servers, broker_timeout_ms=20_000, idle_ms=0))
    advance_until(stager, [1, 2])
    assert staged(stager) == [1, 2]
    broker.stop()
    back = EmbeddedKafka(port=broker.port, storage=storage, log_path=str(tmp_path / "tansu.log"))

    def come_back():
        back.start()
        produce(back, "events", [{"rowtime": ts(3000), "k": 3}])

    returning = threading.Timer(5.0, come_back)
    returning.start()
    try:
        with caplog.at_level(logging.WARNING, logger="streamjoin.kafka"):
            stager.advance()  # the broker is away: asked again until it answers
        returning.join()
        (stager.dir / "END").touch()
        deadline = time.time() + 60
        while not stager.manifest().ended and time.time() < deadline:
            stager.advance()
        assert staged(stager) == [1, 2, 3] and stager.manifest().rows == 3
        assert any("asking again" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    finally:
        returning.join()
        stager.close()
        back.stop()


def test_a_caught_up_silent_partition_stops_holding_the_others_back_after_the_idle_timeout(kafka_broker, kafka_topic, tmp_path):
    create_topic(kafka_broker.servers, kafka_topic, 2)
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(0), "k": 0}], partition=1)  # then silent
    produce(kafka_broker, kafka_topic, [{"rowtime": ts(t * 1000), "k": t} for t in (10, 11)], partition=0)
    stager = Stager(spec(tmp_path, kafka_topic, kafka_broker.servers, idle_ms=1000))
    try:
        first = time.monotonic()  # no idle timeout can start before this
        advance_until(stager, [0])  # (the idle timeout counts from when partition 1 is seen caught up: after 0 is read)
        assert staged(stager) == [0]  # 10 and 11 wait: partition 1 may still bring rows before them
        # partition 1 is caught up and silent: after the idle timeout (counted from when the stager
        # saw it caught up, which a busy machine may take a pass or two to see) 10 and 11 come
        advance_until(stager, [0, 10, 11], timeout_s=20)
        assert staged(stager) == [0, 10, 11]
        assert time.monotonic() - first >= 1.0, "released before the idle timeout passed"
    finally:
        stager.close()


def test_a_topic_that_does_not_exist_reads_nothing_and_says_so_once(kafka_broker, kafka_topic, tmp_path, caplog):
    import logging

    stager = Stager(spec(tmp_path, f"{kafka_topic}-misspelt", kafka_broker.servers))
    try:
        with caplog.at_level(logging.WARNING, logger="streamjoin.kafka"):
            stager.advance()
            stager.advance()
            (stager.dir / "END").touch()
            stager.advance()
    finally:
        stager.close()
    said = [r.getMessage() for r in caplog.records if "does not exist" in r.getMessage()]
    assert said == [f"kafka {kafka_broker.servers}: topic '{kafka_topic}-misspelt' does not exist (yet): nothing is read "
                    "from it until it does"]
    assert staged(stager) == [] and stager.manifest().ended
