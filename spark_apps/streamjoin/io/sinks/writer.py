"""Where released rows go: JSON Lines to stdout, or files in a directory (`part-NNNNNNNN.jsonl`,
names that sort in emission order), or records of a Kafka topic (io.sinks.kafka_sink)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from streamjoin.faults import alive, generation
from streamjoin.io.formats.jsonlines import format_lines, format_rows


def row_writer(target: str, suffix: str, checkpoint: Path):
    """The writer of `run`'s output: a RowWriter, or a registered output's (io.connectors: a topic,
    `kafka://TOPIC`, io.sinks.kafka_sink; a Kinesis stream, `kinesis://STREAM`, io.sinks.kinesis_sink),
    whose record of what it sent lives in the checkpoint."""
    from streamjoin.io.connectors import writer_for

    return writer_for(target, suffix, checkpoint) or RowWriter(target, suffix)


class RowWriter:
    """Writes released rows: JSON Lines to stdout, or to files in a directory."""

    def __init__(self, target: str, suffix: str = ""):
        """`suffix`: after each file's name (`part-00000001-ALERTS.jsonl`), so that several
        outputs of one application write into one directory."""
        self.stdout, self.suffix = target == "-", suffix
        self._born = generation()  # (a crash harness's simulated kill: a killed run's writer writes nothing more)
        self.dir = None if self.stdout else Path(target)
        if self.dir:
            self.dir.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, rows: list[dict]) -> None:
        self._emit(name, [("".join(format_rows(rows))).encode()] if rows else [])

    def write_table(self, name: str, table, order=None) -> None:
        """Like `write`, for an Arrow table (formatted column by column: io.formats.jsonlines.format_lines,
        slices of it on every core at once: Arrow's kernels release the GIL), each slice written
        as soon as it is formatted: the text of a few slices in memory, not of the whole table.
        `order`: the rows' indices in the order to write them (Arrow's sort_indices), taken a slice
        at a time, so that no sorted copy of the whole table is made."""
        self._emit(name, (_text_bytes(chunk) for chunk in _format_in_slices(table, order)) if table.num_rows else [])

    def _emit(self, name: str, parts) -> None:
        """The lines' bytes (a list or an iterator of them, none for no lines) to stdout, or to
        `<dir>/<name>.jsonl` (nothing for no lines)."""
        alive(self._born)
        if self.stdout:
            for part in parts:
                sys.stdout.buffer.write(part)
            sys.stdout.flush()
        elif parts:
            path = self.dir / f"{name}{self.suffix}.jsonl"
            tmp = self.dir / f".{name}{self.suffix}.jsonl.tmp"
            with open(tmp, "wb") as f:
                for part in parts:
                    f.write(part)
            os.replace(tmp, path)  # idempotent by name: a replayed batch rewrites the same file


FORMAT_SLICE = 262_144  # rows formatted per task


def write_sorted(writer, name: str, table, order) -> None:
    """`table`'s rows in `order` (indices) through any writer: a RowWriter takes them a slice at a
    time (RowWriter.write_table), the others (a topic's, a stream's) as one sorted table."""
    if isinstance(writer, RowWriter):
        writer.write_table(name, table, order)
    else:
        writer.write_table(name, table.take(order))


def _format_in_slices(table, order=None):
    """The table's lines, slice by slice in order (in `order`'s, when given), formatted on every
    core with at most one slice per core waiting to be written (9.75M rows at once held 1.4 GB of
    text, bench inner-dense)."""
    if table.num_rows <= FORMAT_SLICE:
        yield from format_lines(table if order is None else table.take(order))
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    workers = os.cpu_count() or 2
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = deque()
        for start in range(0, table.num_rows, FORMAT_SLICE):
            pending.append(pool.submit(_format_slice, table, order, start))
            if len(pending) > workers:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def _format_slice(table, order, start: int):
    rows = table.slice(start, FORMAT_SLICE) if order is None else table.take(order.slice(start, FORMAT_SLICE))
    return format_lines(rows)


def _text_bytes(array) -> memoryview:
    """The characters of a string array without nulls, end to end, as they lie in its buffer."""
    import numpy as np
    import pyarrow as pa

    _, offsets, data = array.buffers()
    wide = pa.types.is_large_string(array.type)
    bounds = np.frombuffer(offsets, dtype=np.int64 if wide else np.int32)[array.offset:array.offset + len(array) + 1]
    if data is None or not len(array):
        return memoryview(b"")
    return memoryview(data)[int(bounds[0]):int(bounds[-1])]
