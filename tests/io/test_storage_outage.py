"""Storage faults (issue 20, item 3): the S3 endpoint goes away during a run and comes back. The
S3 sink and the S3 landing-zone reader retry with backoff (io/storage/retry.py) and the run goes on with
nothing lost or doubled; past the retry limit the query fails with the reason, and a restart
from its checkpoint finishes the job. Each run is `streamjoin run` in a process of its own,
against an embedded S3 server of its own that is stopped and started again on the same port and
folder (its objects survive, as a real endpoint's would)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runtime_helpers import ts, write_jsonl
from streamjoin.io.sinks.hours import complete_hours, read_hour_arrow
from streamjoin.io.storage import retry
from streamjoin.io.storage.embedded_s3 import EmbeddedS3

pytestmark = [pytest.mark.spark, pytest.mark.s3]  # a streamjoin run against an embedded S3 that goes away

SINK_SQL = """CREATE STREAM orders (id INT, amount INT) WITH (connector = 'files', format = 'json', path = '{root}/orders', lateness = '1 SECOND');
CREATE SINK placed WITH (connector = 's3', path = 's3://streamjoin/outage/placed', format = 'delta', partitioned_by = 'hour');
INSERT INTO placed SELECT STREAM ROWTIME AS placed_at, id, amount FROM orders;
"""
LANDING_SQL = """CREATE STREAM orders (id INT, amount INT) WITH (connector = 's3', format = 'json', path = 's3://streamjoin/outage/landing/', lateness = '1 SECOND');
SELECT STREAM ROWTIME, id, amount FROM orders;
"""


def batch(n: int, size: int = 50) -> list[dict]:
    """Orders n*size .. n*size+size-1, 2 minutes of rowtimes per batch (so hours close)."""
    return [{"id": n * size + i, "amount": i, "rowtime": ts(n * 120_000 + i * 2_000)} for i in range(size)]


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


class Run:
    """`streamjoin run` against one embedded S3 server, in a process of its own."""

    def __init__(self, root: Path, sql: str, retry_s: float):
        self.root, self.server = root, EmbeddedS3(port=0, data_dir=root / "s3")
        self.server.start()
        (root / "query.sql").write_text(sql.format(root=root))
        self.env = {**os.environ, **self.server.env(), "STREAMJOIN_STORAGE_RETRY_S": str(retry_s)}
        self.proc = None

    def start(self, until_idle: bool = False) -> None:
        cmd = [sys.executable, "-m", "streamjoin.cli", "run", str(self.root / "query.sql"), "--checkpoint",
               str(self.root / "checkpoint"), "--output", str(self.root / "out"), *(["--until-idle"] if until_idle else [])]
        self.log = open(self.root / "run.log", "ab")  # closed in finish()
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=self.log, stderr=self.log)

    def status(self) -> dict:
        try:
            return json.loads((self.root / "checkpoint" / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def wait_for(self, what: str, condition, timeout: float = 180) -> None:
        deadline = time.time() + timeout
        while not condition(self.status()):
            assert self.proc.poll() is None, f"the run exited ({self.proc.returncode}) waiting for {what}: {self.text()[-3000:]}"
            assert time.time() < deadline, f"timed out waiting for {what}: {self.status()}"
            time.sleep(0.2)

    def cut_off_after(self, what: str, condition) -> None:
        """Start the run, wait until `condition(status)`, then take the S3 endpoint away."""
        self.start()
        self.wait_for(what, condition)
        self.server.stop()

    def finish(self, timeout: float = 180) -> int:
        code = self.proc.wait(timeout)
        self.log.close()
        return code

    def text(self) -> str:
        return (self.root / "run.log").read_text(errors="replace")

    def put(self, key: str, rows: list[dict]) -> None:
        self.server.settings.client().put_object(Bucket="streamjoin", Key=key, Body=jsonl(rows).encode())

    def committed_ids(self) -> list[int]:
        sink, ids = "s3://streamjoin/outage/placed", []
        for hour in ("2024-01-01T00", "2024-01-01T01"):
            table = read_hour_arrow(sink, hour, self.server.settings, require_complete=False)
            ids += table.column("id").to_pylist() if table.num_rows else []
        return sorted(ids)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        self.server.stop()


@pytest.fixture
def runs():
    """Makes runs (`runs(root, sql, retry_s)`); each one's process and server are stopped after the test."""
    made = []

    def make(root: Path, sql: str, retry_s: float) -> Run:
        made.append(Run(root, sql, retry_s))
        return made[-1]

    yield make
    for run in made:
        run.close()


def emitted(n: int):
    return lambda s: s.get("state") == "running" and s.get("rows_emitted", 0) >= n


def write_orders(root: Path, n: int) -> None:
    write_jsonl(root / "orders" / f"{n:04d}.json", batch(n))


def sink_outage(run: Run, root: Path, outage_s: float) -> Run:
    """Orders land as local files; the S3 sink's endpoint is down for `outage_s` while two batches
    wait to be committed. Returns the run, stopped gracefully after the endpoint came back."""
    write_orders(root, 0)
    run.cut_off_after("the first batch committed", emitted(50))
    write_orders(root, 1)  # read and joined; its commit meets the outage
    time.sleep(outage_s / 2)
    write_orders(root, 2)
    time.sleep(outage_s / 2)
    deadline = time.time() + 90  # (a busy machine reads and joins batch 1 later: its commit meets the outage then)
    while "storage unreachable, retrying" not in run.text() and time.time() < deadline:
        time.sleep(0.5)
    assert run.proc.poll() is None, run.text()[-3000:]  # still running: retrying, not failed
    run.server.start()
    run.wait_for("the batches held up by the outage", emitted(150))
    run.proc.send_signal(signal.SIGTERM)
    assert run.finish() == 0, run.text()[-3000:]
    return run


@pytest.mark.parametrize("outage_s", [8, pytest.param(60, marks=pytest.mark.long)])
def test_an_s3_sink_rides_out_an_outage_and_commits_every_row_once(tmp_path, runs, outage_s):
    run = sink_outage(runs(tmp_path, SINK_SQL, retry_s=max(120, outage_s * 3)), tmp_path, outage_s)
    assert run.committed_ids() == list(range(150))  # nothing lost, nothing twice
    assert "storage unreachable, retrying" in run.text() and "storage reachable again" in run.text()


@pytest.mark.long
def test_past_the_retry_limit_the_query_fails_with_the_reason_and_a_restart_finishes_the_job(tmp_path, runs):
    run = runs(tmp_path, SINK_SQL, retry_s=4)
    write_orders(tmp_path, 0)
    run.cut_off_after("the first batch committed", emitted(50))
    write_orders(tmp_path, 1)
    assert run.finish() == 1
    last = run.text().strip().splitlines()[-1]
    assert last.startswith("streamjoin: StorageUnavailableError: sink placed version 1: the storage was unreachable"), last
    assert "STREAMJOIN_STORAGE_RETRY_S=4" in last and run.status()["state"] == "failed"
    run.server.start()
    write_orders(tmp_path, 2)
    run.start(until_idle=True)  # from the checkpoint: the failed batch is redone
    assert run.finish() == 0, run.text()[-3000:]
    assert run.committed_ids() == list(range(150))
    assert complete_hours("s3://streamjoin/outage/placed", run.server.settings) == ["2024-01-01T00"]


@pytest.mark.long
def test_an_s3_landing_zone_rides_out_a_sixty_second_outage_and_reads_each_object_once(tmp_path, runs):
    run = runs(tmp_path, LANDING_SQL, retry_s=180)
    run.put("outage/landing/0000.json", batch(0))
    run.cut_off_after("the first object read", lambda s: s.get("inputs", {}).get("orders", {}).get("rows_read", 0) >= 50)
    time.sleep(60)
    assert run.proc.poll() is None, run.text()[-3000:]
    run.server.start()
    run.put("outage/landing/0001.json", batch(1))
    run.put("outage/landing/0002.json", batch(2))
    run.wait_for("the objects put after the outage", lambda s: s.get("inputs", {}).get("orders", {}).get("rows_read", 0) >= 150)
    run.proc.send_signal(signal.SIGTERM)
    assert run.finish() == 0
    run.start(until_idle=True)
    assert run.finish() == 0, run.text()[-3000:]
    rows = [json.loads(line) for p in sorted((tmp_path / "out").glob("part-*.jsonl")) for line in p.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == list(range(150))
    assert "storage unreachable, retrying" in run.text()


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def test_a_storage_error_is_retried_with_backoff_until_it_passes():
    clock = FakeClock()
    calls = []

    def flaky():
        calls.append(clock.now)
        if len(calls) < 4:
            raise ConnectionRefusedError(111, "Connection refused")
        return "done"

    assert retry.retrying("sink x", flaky, limit=60, sleep=clock.sleep, clock=clock) == "done"
    assert [round(b - a, 1) for a, b in zip(calls, calls[1:], strict=False)] == [0.5, 1.0, 2.0]


def test_a_storage_error_past_the_limit_fails_with_what_and_how_long_and_other_errors_fail_at_once():
    clock = FakeClock()

    def down():
        raise OSError("AWS Error NETWORK_CONNECTION during PutObject operation: curlCode: 7, Couldn't connect to server")

    with pytest.raises(retry.StorageUnavailableError, match=r"sink x: the storage was unreachable for \d+ s .*Couldn't connect"):
        retry.retrying("sink x", down, limit=30, sleep=clock.sleep, clock=clock)
    assert 30 <= clock.now < 45
    calls = []

    def bad_row():
        calls.append(1)
        raise ValueError("column k does not read as int32")

    with pytest.raises(ValueError):
        retry.retrying("input a", bad_row, limit=30, sleep=clock.sleep, clock=clock)
    assert calls == [1]
