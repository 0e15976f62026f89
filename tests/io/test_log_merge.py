"""The rowtime merge of a partitioned log (io.sources.log_merge, shared by the Kafka and Kinesis inputs):
a part that has given nothing yet holds the clock back, so its first rows are not late."""

from __future__ import annotations

import time

import pyarrow as pa
from streamjoin.io.sources.log_merge import Part, RowtimeMerge


class Merge(RowtimeMerge):
    def __init__(self, parts: list[str], idle_ms: int = 10_000):
        self.parts = {p: Part(p) for p in parts}
        self.rows, self.rowtime, self.idle_ms = None, "t", idle_ms

    def read(self, part: str, rowtimes: list[int], at_end: bool = False) -> None:
        p = self.parts[part]
        self.hold([self.tagged(pa.table({"t": pa.array(rowtimes, pa.int64())}), p, [str(r) for r in rowtimes])])
        p.caught_up, p.quiet_since = at_end, (time.time() if at_end else None)

    def released(self) -> list[int]:
        table, _ = self.release(everything=False)
        return [] if table is None else table.column("t").to_pylist()


def test_a_partition_whose_first_fetch_has_not_come_holds_back_the_rows_of_the_others():
    merge = Merge(["0", "1"])
    merge.read("1", [500, 1500, 2500])  # partition 0's records (0, 1000, 2000) have not been fetched yet
    assert merge.released() == []  # before 2026-11-29 these left, and partition 0's rows came late
    merge.read("0", [0, 1000, 2000])
    assert merge.released() == [0, 500, 1000, 1500, 2000]  # up to the slower partition's top


def test_an_empty_partition_caught_up_holds_back_until_it_has_been_quiet_for_the_idle_timeout():
    merge = Merge(["0", "1"], idle_ms=200)
    merge.read("0", [], at_end=True)
    merge.read("1", [500, 1500])
    assert merge.released() == []
    time.sleep(0.3)
    assert merge.released() == [500, 1500]
