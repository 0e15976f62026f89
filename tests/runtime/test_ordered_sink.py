"""The ordering sink on its own (no Spark): a crash between writing a release and recording it
rewrites the same output file on restart, so DIR output holds every row exactly once."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from streamjoin.io.sinks.ordered_sink import OrderedSink
from streamjoin.io.sinks.writer import RowWriter


class Batch:
    def __init__(self, rows: list[tuple[str, int]]):
        self.table = pa.table({
            "v": pa.array([v for _, v in rows], pa.int64()),
            "__rowtime": pa.array([t + "Z" for t, _ in rows], pa.string()).cast(pa.timestamp("us", tz="UTC")),
        })

    def toArrow(self):
        return self.table


def watermark(rowtime: str) -> str:
    """Spark's watermark for a clock at `rowtime`, as its progress reports write it: in engine time
    (streamjoin.io.formats.instants)."""
    import datetime as dt

    from streamjoin.io.formats.instants import SHIFT_US, parse_spark_time

    at = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=parse_spark_time(rowtime) + SHIFT_US)
    return at.isoformat(timespec="milliseconds") + "Z"


def output(directory) -> list[int]:
    return [json.loads(line)["v"] for p in sorted(directory.glob("part-*.jsonl")) for line in p.read_text().splitlines()]


def crash_between_write_and_record(sink, monkeypatch) -> None:
    """Batch 0 holds rowtimes 1, 2 and 9 s; the release at a 5 s clock writes 1 and 2, then the
    process dies before the release is recorded."""
    sink(Batch([("2024-01-01 00:00:02", 2), ("2024-01-01 00:00:01", 1), ("2024-01-01 00:00:09", 9)]), 0)

    def crash(*_):
        raise OSError("killed before the release was recorded")

    monkeypatch.setattr(type(sink), "_save", crash)
    with pytest.raises(OSError):
        sink.release(watermark("2024-01-01T00:00:05.000Z"))
    monkeypatch.undo()


def test_a_release_replayed_after_a_crash_rewrites_its_file_instead_of_duplicating_rows(tmp_path, monkeypatch):
    sink = OrderedSink(tmp_path / "ck", RowWriter(str(tmp_path / "out")), ["v"], 0)
    crash_between_write_and_record(sink, monkeypatch)
    assert output(tmp_path / "out") == [1, 2]  # written, not recorded

    restarted = OrderedSink(tmp_path / "ck", RowWriter(str(tmp_path / "out")), ["v"], 0)
    restarted(Batch([("2024-01-01 00:00:02", 2), ("2024-01-01 00:00:01", 1), ("2024-01-01 00:00:09", 9)]), 0)  # replay: ignored
    restarted(Batch([("2024-01-01 00:00:07", 7)]), 1)
    restarted.release(watermark("2024-01-01T00:00:08.000Z"))
    restarted.finish()
    assert output(tmp_path / "out") == [1, 2, 7, 9]
    assert restarted.state().rows_emitted == 4


class Topic:
    """A writer that appends, as a topic's or a stream's does: what it sent stays; it remembers
    what each release sent (TopicWriter finds that by the records' headers)."""

    appends = True

    def __init__(self, dies_after: int | None = None):
        self.sent: list[tuple[str, int]] = []
        self.dies_after = dies_after

    def write_table(self, name: str, table) -> None:
        there = {v for n, v in self.sent if n == name}
        for v in table.column("v").to_pylist():
            if self.dies_after is not None and len(self.sent) == self.dies_after:
                raise OSError("killed inside the release")
            if v not in there:
                self.sent.append((name, v))


def test_a_release_into_a_topic_cut_short_is_redone_with_the_same_rows_however_far_the_clock_moved(tmp_path):
    # the release at a 5 s clock (rows 1, 2, 4) dies after two records; started again, the clock
    # is at 8 s, but the release is redone with its own threshold: 4 completes it, 7 comes after
    topic = Topic(dies_after=2)
    sink = OrderedSink(tmp_path / "ck", topic, ["v"], 0)
    sink(Batch([("2024-01-01 00:00:04", 4), ("2024-01-01 00:00:01", 1), ("2024-01-01 00:00:02", 2),
                ("2024-01-01 00:00:07", 7)]), 0)
    with pytest.raises(OSError):
        sink.release(watermark("2024-01-01T00:00:05.000Z"))
    topic.dies_after = None
    restarted = OrderedSink(tmp_path / "ck", topic, ["v"], 0)
    restarted.release(watermark("2024-01-01T00:00:08.000Z"))
    assert topic.sent == [("part-00000000", 1), ("part-00000000", 2), ("part-00000000", 4)]
    restarted.release(watermark("2024-01-01T00:00:08.000Z"))
    restarted.finish()
    assert [v for _, v in topic.sent] == [1, 2, 4, 7] and restarted.state().pending_release_us is None


HOUR_US = 3_600_000_000


class HourBuckets:
    """The bucketed join's clock arithmetic (hour buckets), without Spark."""

    unit_us = HOUR_US

    def bucket_of(self, us: int) -> int:
        return us // HOUR_US * HOUR_US


def test_a_bucketed_release_that_crashed_is_redone_with_the_same_buckets_however_far_the_clock_moved(tmp_path):
    written = []

    class CrashOnce(OrderedSink):
        def _write_buckets(self, rows, buckets, release):  # as a sink that commits, then dies
            written.append((release, [b // HOUR_US for b in buckets]))
            if len(written) == 1:
                raise RuntimeError("crashed after the commit")
            return 0

    top = [10 * HOUR_US + 1]
    sink = CrashOnce(tmp_path, RowWriter(str(tmp_path / "out")), ["v"], 0, HourBuckets(), lambda: top[0])
    sink(Batch([("1970-01-01 10:00:00", 1)]), 0)
    with pytest.raises(RuntimeError):
        sink.settle(11 * HOUR_US)  # closes hour 10: release 0 = [10] commits, then the crash
    top[0] = 12 * HOUR_US + 1
    sink.settle(12 * HOUR_US + HOUR_US // 2)  # the clock moved past hour 11 meanwhile
    sink.settle(12 * HOUR_US + HOUR_US // 2)
    # release 0 is redone as [10] (a committing sink skips it), not as [10, 11], which it would
    # skip too, losing hour 11; hour 11 comes as release 1
    assert written == [(0, [10]), (0, [10]), (1, [11])]


def test_a_cut_chain_part_redoes_a_crashed_release_with_its_own_threshold(tmp_path, monkeypatch):
    """The next part may have read the crashed release's file: the replay must write the same
    rows under the same name (not more rows from a later threshold), and the rest comes next."""
    import pyarrow.parquet as pq
    from streamjoin.io.sinks.stage_sink import StageSink
    from streamjoin.io.sources.staging import InputSpec

    schema = pa.schema([pa.field("v", pa.int64()), pa.field("__rowtime", pa.timestamp("us", tz="UTC"))])
    spec = InputSpec("__part0", str(tmp_path / "rows"), "parquet", schema, "__rowtime", 0, str(tmp_path / "st"), str(tmp_path / "late"))
    sink = StageSink(tmp_path / "ck", spec, ["v", "__rowtime"], 0)
    crash_between_write_and_record(sink, monkeypatch)

    def read(name):
        table = pq.read_table(tmp_path / "rows" / name).to_pylist()
        return [r["v"] for r in table if not r["_bound"]], [r["__rowtime"].second for r in table if r["_bound"]]

    assert read("part-00000000.parquet") == ([1, 2], [5])  # written, not recorded (the next part may have read it)
    sink.release(watermark("2024-01-01T00:00:10.000Z"))  # after the restart, a later clock
    assert read("part-00000000.parquet") == ([1, 2], [5])  # redone exactly, not with 9
    sink.release(watermark("2024-01-01T00:00:10.000Z"))
    assert read("part-00000001.parquet") == ([9], [10])
    assert sorted(p.name for p in (tmp_path / "rows").iterdir()) == ["part-00000000.parquet", "part-00000001.parquet"]


def test_status_rows_emitted_counts_over_runs_of_a_checkpoint_and_rows_emitted_this_run_this_run_only(tmp_path):
    from streamjoin.io.sinks.ordered_sink import SinkState
    from streamjoin.runtime.status import Status, summary

    sink = OrderedSink(tmp_path, None, ["v"], 0)
    sink._save_state(SinkState(rows_emitted=800))  # an earlier run of this checkpoint
    status = Status(tmp_path, [], sink, "q.sql")  # this run starts
    snap = status.snapshot(None)
    assert (snap["rows_emitted"], snap["rows_emitted_this_run"]) == (800, 0)
    assert summary({**snap, "state": "finished"}) == "finished: 0 rows emitted (800 over every run of this checkpoint), 0 late rows"
    sink._save_state(SinkState(rows_emitted=803))
    snap = status.snapshot(None)
    assert (snap["rows_emitted"], snap["rows_emitted_this_run"]) == (803, 3)
    fresh = Status(tmp_path / "new", [], OrderedSink(tmp_path / "new", None, ["v"], 0), "q.sql").snapshot(None)
    assert summary({**fresh, "state": "finished"}) == "finished: 0 rows emitted, 0 late rows"


def test_the_state_is_parsed_once_per_write_and_always_read_as_last_written(tmp_path, monkeypatch):
    from streamjoin.io.sinks import ordered_sink

    parsed, real = [], json.loads
    monkeypatch.setattr(ordered_sink.json, "loads", lambda text: parsed.append(1) or real(text))
    sink = OrderedSink(tmp_path / "ck", RowWriter(str(tmp_path / "out")), ["v"], 0)
    sink(Batch([("2024-01-01 00:00:01", 1), ("2024-01-01 00:00:09", 9)]), 0)
    assert [sink.state().last_batch for _ in range(5)] == [0] * 5 and len(parsed) == 1
    mine = sink.state()
    mine.rows_emitted = 99  # a reader's copy: the sink's state is not changed by it
    sink.release(watermark("2024-01-01T00:00:05.000Z"))
    assert sink.state().rows_emitted == 1 and len(parsed) == 2
    assert OrderedSink(tmp_path / "ck", RowWriter(str(tmp_path / "out")), ["v"], 0).state().rows_emitted == 1
