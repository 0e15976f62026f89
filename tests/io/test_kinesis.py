"""Kinesis Data Streams as a stream input (connector 'kinesis', io.sources.kinesis), against the embedded
server: records staged like file rows, exactly once across a restart and a reshard, shards of
different speeds merged by rowtime so that none makes another's rows late."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from runtime_helpers import read_output, run_in_two_parts, run_to_end, start, streamjoin, ts, write_jsonl
from streamjoin.io.formats.types import arrow_schema
from streamjoin.io.sources import kinesis
from streamjoin.io.sources.staging import InputSpec, Stager
from streamjoin.plan.model import Column

D = "2024-01-01 "
ORDERS = [(D + "10:00:00", 100), (D + "10:10:00", 101), (D + "10:20:00", 102), (D + "10:25:00", 103), (D + "10:40:00", 104)]
SHIPMENTS = [(D + "10:30:00", 101), (D + "10:45:00", 100), (D + "10:55:00", 103), (D + "11:05:00", 103), (D + "11:30:00", 104)]
SHARD_1 = str(2**127)  # an explicit hash key in the second of two shards (the first: "0")
SHARD_1_ID = "shardId-000000000001"


@pytest.fixture
def stream(s3_server):
    """A fresh Kinesis stream of two shards on the embedded server (its name)."""
    name = f"s-{uuid.uuid4().hex[:10]}"
    client = kinesis.client()
    client.create_stream(StreamName=name, ShardCount=2)
    return name


def put(stream: str, rows: list[dict], hash_key: str | None = None) -> None:
    client = kinesis.client()
    for row in rows:
        extra = {"ExplicitHashKey": hash_key} if hash_key else {}
        client.put_record(StreamName=stream, Data=json.dumps(row).encode(), PartitionKey=str(row.get("k", 0)), **extra)


def test_a_kinesis_stream_joins_a_file_stream_with_the_seed_rows_and_kinesis_put_fills_it(stream, tmp_path):
    (tmp_path / "orders.jsonl").write_text("".join(json.dumps({"rowtime": t, "orderId": i}) + "\n" for t, i in ORDERS))
    put_result = streamjoin("kinesis", "put", stream, tmp_path / "orders.jsonl", "--key", "orderId", timeout=120)
    assert put_result.returncode == 0 and put_result.stderr.strip() == f"streamjoin: put 5 records into {stream}"
    write_jsonl(tmp_path / "shipments" / "1.json", [{"rowtime": t, "orderId": i} for t, i in SHIPMENTS])
    sql = tmp_path / "q.sql"
    sql.write_text(f"""CREATE STREAM orders (orderId INT) WITH (connector = 'kinesis', stream = '{stream}');
CREATE STREAM shipments (orderId INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'shipments'}');
SELECT STREAM ROWTIME, o.orderId, o.ROWTIME AS orderTime, o.approximate_arrival IS NOT NULL AS arrived FROM shipments AS s
JOIN orders OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o.orderId = s.orderId;""")
    result = streamjoin("run", sql, "--until-idle")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["rowtime"], r["orderid"], r["ordertime"], r["arrived"]) for r in rows] == [
        (D + "10:30:00.000", 101, D + "10:10:00.000", True), (D + "10:45:00.000", 100, D + "10:00:00.000", True),
        (D + "10:55:00.000", 103, D + "10:25:00.000", True), (D + "11:05:00.000", 103, D + "10:25:00.000", True),
        (D + "11:30:00.000", 104, D + "10:40:00.000", True)]


def test_a_restart_from_the_checkpoint_reads_each_record_once_with_no_gap(spark, stream, tmp_path):
    put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in range(0, 3)])
    sql = f"CREATE STREAM s (k INT) WITH (connector = 'kinesis', stream = '{stream}');\nSELECT STREAM ROWTIME, k FROM s;"
    run_in_two_parts(spark, sql, tmp_path, lambda: put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in range(3, 6)]))
    assert [r["k"] for r in read_output(tmp_path / "out")] == [0, 1, 2, 3, 4, 5]


def test_records_put_after_a_shard_split_are_read_after_their_parent_and_each_once(spark, stream, tmp_path):
    client = kinesis.client()
    put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in range(0, 4)], hash_key="0")
    sql = f"CREATE STREAM s (k INT) WITH (connector = 'kinesis', stream = '{stream}');\nSELECT STREAM ROWTIME, k FROM s;"
    runner = start(spark, sql, tmp_path, until_idle=False)
    try:
        runner.process_available()
        shard = client.list_shards(StreamName=stream)["Shards"][0]
        client.split_shard(StreamName=stream, ShardToSplit=shard["ShardId"], NewStartingHashKey=str(2**126))
        put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in range(4, 8)], hash_key="1")
        put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in range(8, 10)], hash_key=str(2**126 + 1))
        # a pass reads what the shards return now: the children's records may take another pass (on a
        # loaded machine 30 s was once not enough: the loop ends as soon as every row is staged)
        deadline = time.time() + 120
        runner.process_available()
        while staged_keys(runner) < 10 and time.time() < deadline:
            time.sleep(0.5)
            runner.process_available()
        runner._end_inputs()
        runner.end_of_input()
    finally:
        status = runner.stop("finished")
    assert sorted(r["k"] for r in read_output(tmp_path / "out")) == list(range(10))
    assert status["late_rows"] == 0


def staged_keys(runner) -> int:
    """How many data rows the runner's input has staged so far."""
    steps = sorted(runner.stagers[0].steps_dir.glob("*.parquet"))
    return sum(pq.read_table(p, columns=["k"]).column("k").drop_null().length() for p in steps)


def spec(tmp_path: Path, stream: str, lateness_ms: int = 0) -> InputSpec:
    columns = (Column("k", "INT"), Column("approximate_arrival", "TIMESTAMP"), Column("rowtime", "TIMESTAMP"))
    return InputSpec(alias="s", path=f"kinesis://{stream}", format="json", schema=arrow_schema(columns), rowtime="rowtime",
                     lateness_ms=lateness_ms, state_dir=str(tmp_path / "state"), late_dir=str(tmp_path / "late"),
                     storage=kinesis.settings_from_env(),
                     kinesis={"stream": stream, "start": "trim_horizon", "start_timestamp_us": None, "idle_ms": 60_000})


def staged(stager: Stager) -> list[int]:
    steps = sorted(stager.steps_dir.glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(p) for p in steps]) if steps else None
    return [] if table is None else [k for k in table.column("k").to_pylist() if k is not None]


def test_a_fast_shard_does_not_make_a_slow_shards_rows_late_the_clock_is_the_slowest_shards(stream, tmp_path):
    stager = Stager(spec(tmp_path, stream))
    put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in (10, 11, 12, 20)], hash_key="0")  # the fast shard
    put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in (1, 2)], hash_key=SHARD_1)  # the slow one
    stager.advance()
    assert staged(stager) == [1, 2]  # the fast shard's rows wait for the slow shard
    put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in (3, 15)], hash_key=SHARD_1)
    stager.advance()
    assert staged(stager) == [1, 2, 3, 10, 11, 12, 15]  # merged by rowtime up to the slow shard's 15
    (stager.dir / "END").touch()
    stager.advance()
    m = stager.manifest()
    assert staged(stager) == [1, 2, 3, 10, 11, 12, 15, 20] and m.late_rows == 0 and m.ended
    assert all(state["done"] is False and state["seq"] is not None for state in m.shards.values())


def test_a_stager_started_again_reads_the_held_records_again_and_the_staged_ones_never(stream, tmp_path):
    put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in (10, 20)], hash_key="0")
    put(stream, [{"rowtime": ts(t * 1000), "k": t} for t in (5,)], hash_key=SHARD_1)
    first = Stager(spec(tmp_path, stream))
    first.advance()
    assert staged(first) == [5]  # 10 and 20 are held (the other shard is at 5), then the process ends
    again = Stager(spec(tmp_path, stream))
    put(stream, [{"rowtime": ts(30_000), "k": 30}], hash_key=SHARD_1)
    again.advance()
    assert staged(again) == [5, 10, 20]
    (again.dir / "END").touch()
    again.advance()
    assert staged(again) == [5, 10, 20, 30] and again.manifest().rows == 4


def test_a_malformed_record_fails_the_query_with_the_shard_that_holds_it_when_on_error_is_fail(spark, stream, tmp_path):
    kinesis.client().put_record(StreamName=stream, Data=b"not json", PartitionKey="1", ExplicitHashKey="0")
    sql = (f"CREATE STREAM s (k INT) WITH (connector = 'kinesis', stream = '{stream}', on_error = 'fail');\n"
           "SELECT STREAM k FROM s;")
    with pytest.raises(Exception, match="shardId-000000000000"):
        run_to_end(start(spark, sql, tmp_path, until_idle=True))


def test_malformed_records_are_dead_letters_naming_shard_and_sequence_and_the_good_ones_run(spark, stream, tmp_path):
    client = kinesis.client()
    put(stream, [{"rowtime": ts(1_000), "k": 1}], hash_key=SHARD_1)
    bad = client.put_record(StreamName=stream, Data=b"not json", PartitionKey="1", ExplicitHashKey=SHARD_1)
    wrong = client.put_record(StreamName=stream, Data=b'{"rowtime": "2024-01-01 00:00:02", "k": "two"}',
                              PartitionKey="1", ExplicitHashKey=SHARD_1)
    put(stream, [{"rowtime": ts(3_000), "k": 3}], hash_key=SHARD_1)
    sql = f"CREATE STREAM s (k INT) WITH (connector = 'kinesis', stream = '{stream}');\nSELECT STREAM k FROM s;"
    status = run_to_end(start(spark, sql, tmp_path, until_idle=True))
    assert [r["k"] for r in read_output(tmp_path / "out")] == [1, 3]
    assert status["inputs"]["s"]["rejected_rows"] == 2 and status["inputs"]["s"]["rows_read"] == 2
    letters = [json.loads(line) for f in sorted((tmp_path / "out" / "rejected" / "s").glob("*.jsonl"))
               for line in f.read_text().splitlines()]
    assert [(r["input"], r["source"], r["sequence"], r["raw"]) for r in letters] == [
        ("s", f"kinesis://{stream}/{SHARD_1_ID}", bad["SequenceNumber"], "not json"),
        ("s", f"kinesis://{stream}/{SHARD_1_ID}", wrong["SequenceNumber"], '{"rowtime": "2024-01-01 00:00:02", "k": "two"}')]
    assert "does not read as int32" in letters[1]["reason"]


@pytest.mark.parametrize(("options", "message"), [
    ("connector = 'kinesis'", "connector 'kinesis' needs stream = 'NAME'"),
    ("connector = 'kinesis', stream = 'x', start = 'oldest'", "start = 'oldest': use trim_horizon, latest, at_timestamp"),
    ("connector = 'kinesis', stream = 'x', start = 'at_timestamp'", "start = 'at_timestamp' needs start_timestamp"),
    ("connector = 'kinesis', stream = 'x', format = 'csv'", "records are read as JSON"),
])
def test_bad_kinesis_options_are_rejected_before_anything_runs(tmp_path, options, message):
    sql = tmp_path / "q.sql"
    sql.write_text(f"CREATE STREAM s (k INT) WITH ({options});\nSELECT STREAM k FROM s;")
    result = streamjoin("run", sql, "--until-idle", timeout=120)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_throttled_call_is_retried_with_backoff_and_another_error_is_raised_at_once(monkeypatch):
    from botocore.exceptions import ClientError

    monkeypatch.setattr(kinesis.time, "sleep", lambda s: None)
    source = kinesis.KinesisSource({"stream": "s"}, {"endpoint_url": "http://127.0.0.1:1", "access_key": "a",
                                                     "secret_key": "b", "region": "us-east-1"}, parse=None)
    calls = []

    def throttled(**kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "GetRecords")
        return {"Records": []}

    assert source._call(throttled, ShardIterator="i") == {"Records": []} and len(calls) == 3

    def missing(**kwargs):
        calls.append(kwargs)
        raise ClientError({"Error": {"Code": "ResourceNotFoundException"}}, "ListShards")

    calls.clear()
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        source._call(missing)
    assert len(calls) == 1


class FakeKinesis:
    """Kinesis as AWS documents it for reshards, which moto does not follow (its split moves the
    parent's records into the children, its merge copies them): a closed shard keeps its records
    and ends (no NextShardIterator once read); a child holds only what came after."""

    class exceptions:
        class ExpiredIteratorException(Exception):
            pass

    def __init__(self):
        self.shards: dict[str, dict] = {}
        self.seq = 0

    def add_shard(self, shard_id: str, parents: tuple[str, ...] = ()) -> None:
        for p in parents:
            self.shards[p]["closed"] = True
        self.shards[shard_id] = {"records": [], "closed": False, "parents": parents}

    def put(self, shard_id: str, row: dict) -> None:
        self.seq += 1
        self.shards[shard_id]["records"].append({"SequenceNumber": str(self.seq), "Data": json.dumps(row).encode(),
                                                "ApproximateArrivalTimestamp": dt.datetime.now(dt.UTC)})

    def list_shards(self, **kwargs):
        out = []
        for shard_id, s in self.shards.items():
            entry = {"ShardId": shard_id, "SequenceNumberRange": {"StartingSequenceNumber": "0"}}
            if s["closed"]:
                entry["SequenceNumberRange"]["EndingSequenceNumber"] = str(self.seq)
            if s["parents"]:
                entry["ParentShardId"] = s["parents"][0]
            if len(s["parents"]) > 1:
                entry["AdjacentParentShardId"] = s["parents"][1]
            out.append(entry)
        return {"Shards": out}

    def get_shard_iterator(self, StreamName, ShardId, ShardIteratorType, StartingSequenceNumber=None, Timestamp=None):
        position = 0
        if ShardIteratorType == "AFTER_SEQUENCE_NUMBER":
            position = next(i + 1 for i, r in enumerate(self.shards[ShardId]["records"]) if r["SequenceNumber"] == StartingSequenceNumber)
        return {"ShardIterator": f"{ShardId}:{position}"}

    def get_records(self, ShardIterator, Limit):
        shard_id, position = ShardIterator.rsplit(":", 1)
        shard, position = self.shards[shard_id], int(position)
        records = shard["records"][position:position + Limit]
        end = position + len(records)
        done = shard["closed"] and end == len(shard["records"])
        return {"Records": records, "MillisBehindLatest": 0, "NextShardIterator": None if done else f"{shard_id}:{end}"}


def test_a_merge_of_two_shards_is_read_after_both_parents_and_each_record_once(tmp_path, monkeypatch):
    fake = FakeKinesis()
    monkeypatch.setattr(kinesis, "client", lambda settings=None: fake)
    fake.add_shard("shard-0")
    fake.add_shard("shard-1")
    for t in (1, 3):
        fake.put("shard-0", {"rowtime": ts(t * 1000), "k": t})
    fake.put("shard-1", {"rowtime": ts(2000), "k": 2})
    stager = Stager(spec(tmp_path, "fake"))
    stager.advance()
    assert staged(stager) == [1, 2]  # 3 waits for shard-1
    fake.put("shard-1", {"rowtime": ts(4000), "k": 4})
    fake.add_shard("shard-2", parents=("shard-0", "shard-1"))  # the merge: both parents close
    for t in (5, 6):
        fake.put("shard-2", {"rowtime": ts(t * 1000), "k": t})
    stager.advance()
    m = stager.manifest()
    assert m.shards["shard-0"]["done"] and m.shards["shard-1"]["done"]  # read to their ends: the child starts
    (stager.dir / "END").touch()
    stager.advance()
    m = stager.manifest()
    assert staged(stager) == [1, 2, 3, 4, 5, 6] and m.late_rows == 0
    assert m.shards["shard-2"]["seq"] == str(fake.seq)


def test_a_child_shard_is_not_read_before_its_parent_is_read_to_its_end(tmp_path, monkeypatch):
    fake = FakeKinesis()
    monkeypatch.setattr(kinesis, "client", lambda settings=None: fake)
    fake.add_shard("shard-0")
    fake.put("shard-0", {"rowtime": ts(1000), "k": 1})
    fake.add_shard("shard-1", parents=("shard-0",))  # a split: the parent closes, holding its record
    fake.add_shard("shard-2", parents=("shard-0",))
    fake.put("shard-1", {"rowtime": ts(2000), "k": 2})
    fake.put("shard-2", {"rowtime": ts(3000), "k": 3})
    source = kinesis.KinesisSource({"stream": "fake"}, None, parse=lambda *a: None)
    positions: dict = {}
    source._list(positions)
    assert not source._ready(source.parts["shard-1"], positions)  # the parent is not read yet
    stager = Stager(spec(tmp_path, "fake"))
    (stager.dir / "END").touch()
    stager.advance()
    assert staged(stager) == [1, 2, 3] and stager.manifest().late_rows == 0


def test_an_expired_shard_iterator_is_made_again_after_the_last_record_read(tmp_path, monkeypatch):
    fake = FakeKinesis()
    monkeypatch.setattr(kinesis, "client", lambda settings=None: fake)
    fake.add_shard("shard-0")
    for t in (1, 2):
        fake.put("shard-0", {"rowtime": ts(t * 1000), "k": t})
    stager = Stager(spec(tmp_path, "fake"))
    stager.advance()
    fake.put("shard-0", {"rowtime": ts(3000), "k": 3})
    served = fake.get_records
    expired = []

    def get_records(ShardIterator, Limit):
        if not expired:  # the iterator kept since the last poll has expired (5 minutes unused)
            expired.append(ShardIterator)
            raise fake.exceptions.ExpiredIteratorException(ShardIterator)
        return served(ShardIterator=ShardIterator, Limit=Limit)

    monkeypatch.setattr(fake, "get_records", get_records)
    (stager.dir / "END").touch()
    stager.advance()
    assert expired and staged(stager) == [1, 2, 3] and stager.manifest().rows == 3


def records_of(stream: str) -> list[dict]:
    client = kinesis.client()
    rows = []
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        page = client.get_records(ShardIterator=iterator, Limit=10_000)
        rows += [(json.loads(r["Data"]), r["PartitionKey"]) for r in page["Records"]]
    return rows


def test_run_writes_the_seed_joins_rows_into_a_kinesis_stream_as_a_kda_destination(stream, tmp_path):
    write_jsonl(tmp_path / "o" / "1.json", [{"rowtime": t, "orderId": i} for t, i in ORDERS])
    write_jsonl(tmp_path / "s" / "1.json", [{"rowtime": t, "orderId": i} for t, i in SHIPMENTS])
    sql = tmp_path / "q.sql"
    sql.write_text(f"""CREATE STREAM orders (orderId INT) WITH (connector = 'files', path = '{tmp_path / "o"}');
CREATE STREAM shipments (orderId INT) WITH (connector = 'files', path = '{tmp_path / "s"}');
SELECT STREAM ROWTIME, o.orderId, o.ROWTIME AS orderTime FROM shipments AS s
JOIN orders OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o.orderId = s.orderId;""")
    result = streamjoin("run", sql, "--until-idle", "--output", f"kinesis://{stream}?key=orderid", "--checkpoint", tmp_path / "cp")
    assert result.returncode == 0, result.stderr[-3000:]
    got = sorted((r["rowtime"], r["orderid"], r["ordertime"], key) for r, key in records_of(stream))
    assert got == [(D + "10:30:00.000", 101, D + "10:10:00.000", "101"), (D + "10:45:00.000", 100, D + "10:00:00.000", "100"),
                   (D + "10:55:00.000", 103, D + "10:25:00.000", "103"), (D + "11:05:00.000", 103, D + "10:25:00.000", "103"),
                   (D + "11:30:00.000", 104, D + "10:40:00.000", "104")]


def test_a_destination_release_cut_short_by_a_crash_is_completed_without_doubles(stream, tmp_path, monkeypatch):
    from streamjoin.io.sinks import kinesis_sink

    rows = pa.table({"k": [1, 2, 2, 3], "v": ["a", "b", "b", "c"]})  # two identical rows: both must arrive
    first = kinesis_sink.StreamWriter(f"kinesis://{stream}?key=k", tmp_path / "state")
    first.write_table("part-00000000", rows.slice(0, 1))
    real_put = first._put

    def dies_after_two(batch):  # the process dies once two records of the release are in
        real_put(batch[:2])
        raise SystemExit("killed")

    monkeypatch.setattr(first, "_put", dies_after_two)
    with pytest.raises(SystemExit):
        first.write_table("part-00000001", rows)
    again = kinesis_sink.StreamWriter(f"kinesis://{stream}?key=k", tmp_path / "state")
    again.write_table("part-00000000", rows.slice(0, 1))  # done before the crash: not sent again
    again.write_table("part-00000001", rows)
    assert sorted((r["k"], r["v"]) for r, _ in records_of(stream)) == [(1, "a"), (1, "a"), (2, "b"), (2, "b"), (3, "c")]


def test_a_table_fed_by_debezium_events_on_a_kinesis_stream_joins_a_stream_and_folds_to_the_join_with_its_last_rows(
        spark, stream, tmp_path):
    # RisingWave's `FORMAT DEBEZIUM ENCODE JSON` on connector 'kinesis' (issue 40): each record one event;
    # before, the envelopes were read as rows (every column NULL), silently
    import random

    from changelog_helpers import debezium_events, fold_by, sql_join_rows

    rng, state = random.Random("kinesis-debezium"), {}
    parts = []
    for n in range(2):
        orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, None])} for i in range(6)]
        parts.append((orders, debezium_events(rng, [1, 2, 3, 4], {"name": ["ann", "bob", None]}, 8, state)))
    assert any("payload" in e or e["op"] == "u" for _, events in parts for e in events)  # updates and deletes both
    sql = f"""CREATE SOURCE orders (oid INT, cust INT) WITH (connector = 'files', path = '{tmp_path}/orders') FORMAT PLAIN ENCODE JSON;
CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR) WITH (connector = 'kinesis', stream = '{stream}') FORMAT DEBEZIUM ENCODE JSON;
CREATE MATERIALIZED VIEW named AS SELECT o.oid, c.id, c.name FROM orders AS o LEFT JOIN customers AS c ON o.cust = c.id;"""

    def feed(n: int) -> None:
        put(stream, parts[n][1], hash_key="0")  # one shard: the events of a key stay in order
        write_jsonl(tmp_path / "orders" / f"{n}.json", parts[n][0])

    feed(0)
    _, status = run_in_two_parts(spark, sql, tmp_path / "run", lambda: feed(1))
    rows = read_output(tmp_path / "run" / "out")
    orders = parts[0][0] + parts[1][0]
    want = sql_join_rows(orders, list(state.values()), lambda o, c: o["cust"] is not None and o["cust"] == c["id"], "LEFT",
                         lambda o, c: (o and o["oid"], c and c["id"], c and c["name"]))
    assert status["rejected_rows"] == 0, status
    assert fold_by(rows, ("oid", "id", "name")) == want, rows
