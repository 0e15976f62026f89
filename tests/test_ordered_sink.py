"""The ordering sink on its own (no Spark): a crash between writing a release and recording it
rewrites the same output file on restart, so DIR output holds every row exactly once."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from streamjoin.runtime.run import OrderedSink, RowWriter


class Batch:
    def __init__(self, rows: list[tuple[str, int]]):
        self.table = pa.table({
            "v": pa.array([v for _, v in rows], pa.int64()),
            "__rowtime": pa.array([t + "Z" for t, _ in rows], pa.string()).cast(pa.timestamp("us", tz="UTC")),
        })

    def toArrow(self):
        return self.table


def output(directory) -> list[int]:
    return [json.loads(line)["v"] for p in sorted(directory.glob("part-*.jsonl")) for line in p.read_text().splitlines()]


def test_a_release_replayed_after_a_crash_rewrites_its_file_instead_of_duplicating_rows(tmp_path, monkeypatch):
    sink = OrderedSink(tmp_path / "ck", RowWriter(str(tmp_path / "out")), ["v"], 0)
    sink(Batch([("2024-01-01 00:00:02", 2), ("2024-01-01 00:00:01", 1), ("2024-01-01 00:00:09", 9)]), 0)

    def crash(*_):
        raise OSError("killed before the release was recorded")

    monkeypatch.setattr(OrderedSink, "_save", crash)
    with pytest.raises(OSError):
        sink.release("2024-01-01T00:00:05.000Z")
    assert output(tmp_path / "out") == [1, 2]  # written, not recorded
    monkeypatch.undo()

    restarted = OrderedSink(tmp_path / "ck", RowWriter(str(tmp_path / "out")), ["v"], 0)
    restarted(Batch([("2024-01-01 00:00:02", 2), ("2024-01-01 00:00:01", 1), ("2024-01-01 00:00:09", 9)]), 0)  # replay: ignored
    restarted(Batch([("2024-01-01 00:00:07", 7)]), 1)
    restarted.release("2024-01-01T00:00:08.000Z")
    restarted.finish()
    assert output(tmp_path / "out") == [1, 2, 7, 9]
    assert restarted.state().rows_emitted == 4
