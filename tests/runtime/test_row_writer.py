"""A release of many rows is formatted slice by slice on every core and written as each slice is
ready (io.sinks.writer): every line once, in the table's order, to stdout and to a file, and the
text of the whole release is never held at once."""

from __future__ import annotations

import json

import pyarrow as pa
from streamjoin.io.sinks import writer
from streamjoin.io.sinks.writer import RowWriter


def release(n: int) -> pa.Table:
    return pa.table({"v": pa.array(range(n), pa.int64()), "s": pa.array([f"row {i}" if i % 7 else None for i in range(n)])})


def test_a_release_of_many_slices_is_written_whole_and_in_order_to_a_file_and_to_stdout(tmp_path, monkeypatch, capfdbinary):
    monkeypatch.setattr(writer, "FORMAT_SLICE", 1000)
    table = release(10_500)
    RowWriter(str(tmp_path)).write_table("part-00000000", table)
    RowWriter("-").write_table("part-00000000", table)
    for text in ((tmp_path / "part-00000000.jsonl").read_text(), capfdbinary.readouterr().out.decode()):
        rows = [json.loads(line) for line in text.splitlines()]
        assert [r["v"] for r in rows] == list(range(10_500))
        assert rows[13] == {"v": 13, "s": "row 13"} and rows[14]["s"] is None


def test_the_slices_are_formatted_no_further_ahead_than_the_cores_write(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "FORMAT_SLICE", 100)
    monkeypatch.setattr(writer.os, "cpu_count", lambda: 2)
    formatted, ahead = [], []
    real = writer.format_lines

    def counting(table):
        formatted.append(table.num_rows)
        return real(table)

    monkeypatch.setattr(writer, "format_lines", counting)
    for _ in writer._format_in_slices(release(2_000)):
        ahead.append(len(formatted))
    assert len(formatted) == 20
    # when the first slice's lines are written, at most the cores' slices and one more are formatted
    assert ahead[0] <= 3


def test_a_release_without_rows_writes_no_file(tmp_path):
    RowWriter(str(tmp_path)).write_table("part-00000000", release(0))
    assert not list(tmp_path.iterdir())


def test_rows_written_in_an_order_of_indices_come_out_in_that_order_through_every_writer(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "FORMAT_SLICE", 1000)
    table = release(10_500)
    order = pa.array([(i * 7919) % 10_500 for i in range(10_500)], pa.uint64())  # a permutation (7919 is prime)
    writer.write_sorted(RowWriter(str(tmp_path)), "part-00000000", table, order)
    lines = (tmp_path / "part-00000000.jsonl").read_text().splitlines()
    assert [json.loads(line)["v"] for line in lines] == order.to_pylist()

    class Other:  # a topic's or a stream's writer: one table, already in order
        def write_table(self, name, rows):
            self.got = rows

    other = Other()
    writer.write_sorted(other, "part-00000000", release(50), pa.array([3, 1, 2, 0], pa.uint64()))
    assert other.got.column("v").to_pylist() == [3, 1, 2, 0]
