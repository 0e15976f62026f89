"""Merging a partitioned log by rowtime: what the Kinesis input (shards) and the Kafka input
(partitions) share.

Each part (a shard, a partition) keeps its own order; records read but not staged yet are *held*.
A held record is released (staged) once every part still delivering has reached its rowtime (the
input's clock is the slowest part's): so a fast part does not make a slow part's rows late; a part
that has given no row yet holds everything back. A part read to its end, or caught up and silent
for `idle_ms`, holds no one back. Released rows come out
merged by rowtime, each part's order kept; each part's position is its last *staged* record's
(the manifest's), so a restart resumes after it: no gap, no duplicate.

A source subclasses `RowtimeMerge`; its rows carry `__part` (the part's id) and `__pos` (the
record's position, a string) until they are released.
"""

from __future__ import annotations

import heapq
import json
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.io.formats.files import conform, read_text

PART, POS = "__part", "__pos"
# in the `fills` a source hands its parse (io.sources.staging): each record's arrival instant (µs), the
# rowtime of an arrival-ordered input (`InputSpec.arrival`); the other keys are columns to fill
ARRIVED = "__arrived"
NOTHING = -(2**63)  # a frontier below every rowtime: nothing is released


@dataclass
class Part:
    id: str
    read_pos: str | None = None  # the last record read (staged or held)
    top_us: int | None = None  # the highest rowtime read from it
    caught_up: bool = False
    finished: bool = False  # read to its end for good (a closed shard)
    quiet_since: float | None = None  # caught up with no records since (wall clock)
    held: list = field(default_factory=list)  # (rowtime_us, pos, row index in `rows`) not staged yet


class RowtimeMerge:
    """Held rows of several parts, released in rowtime order (see the module docstring)."""

    parts: dict  # id -> Part
    rows: pa.Table | None
    rowtime: str | None
    idle_ms: int

    def tagged(self, table: pa.Table, part: Part, positions: list[str]) -> pa.Table:
        """A part's new rows, tagged with the part and each record's position, to `hold`."""
        table = table.append_column(PART, pa.array([part.id] * table.num_rows, pa.string()))
        return table.append_column(POS, pa.array(positions, pa.string()))

    def hold(self, new: list[pa.Table]) -> None:
        rows = pa.concat_tables(([self.rows] if self.rows is not None else []) + new, promote_options="none")
        self.rows = rows
        rowtimes = pc.cast(rows.column(self.rowtime), pa.int64()).to_pylist()
        owners, positions = rows.column(PART).to_pylist(), rows.column(POS).to_pylist()
        for part in self.parts.values():
            part.held = []
        for i, (rt, owner, pos) in enumerate(zip(rowtimes, owners, positions, strict=True)):
            part = self.parts[owner]
            part.held.append((rt, pos, i))
            part.top_us = rt if part.top_us is None else max(part.top_us, rt)

    def frontier(self) -> int | None:
        """The rowtime up to which every part still delivering has come (None: no limit). A part
        still delivering that has given no row yet holds everything back (NOTHING): its first rows
        may come before every other part's (before 2026-11-29 it held nothing back, and a
        partition whose first fetch came late found its rows late)."""
        now = time.time()
        holding = []
        for p in self.parts.values():
            if p.finished or (p.caught_up and p.quiet_since and now - p.quiet_since >= self.idle_ms / 1000):
                continue
            if p.top_us is None:
                return NOTHING
            holding.append(p.top_us)
        return min(holding) if holding else None

    def release(self, everything: bool) -> tuple[pa.Table | None, dict[str, str]]:
        """The held rows up to the frontier (each part's longest prefix at or below it), merged by
        rowtime, each part's order kept; the rest stays held. Also: part -> the position of its
        last released record, for the parts that released any."""
        if self.rows is None or not self.rows.num_rows:
            return None, {}
        frontier = None if everything else self.frontier()
        prefixes = []
        for part in self.parts.values():
            n = 0
            while n < len(part.held) and (frontier is None or part.held[n][0] <= frontier):
                n += 1
            prefixes.append(part.held[:n])
        order = [i for _, _, i in heapq.merge(*prefixes, key=lambda h: h[0])]
        if not order:
            return None, {}
        released = self.rows.take(pa.array(order, pa.int64()))
        keep = sorted(set(range(self.rows.num_rows)) - set(order))
        self.rows = self.rows.take(pa.array(keep, pa.int64()))
        staged = {part.id: prefix[-1][1] for prefix, part in zip(prefixes, self.parts.values(), strict=True) if prefix}
        self.hold([])
        return released.drop_columns([PART, POS]), staged

    def next_positions(self, positions: dict, staged: dict[str, str]) -> dict:
        """The manifest's positions after a release: per part its last staged record (a part with
        nothing held is staged through what it read), its top rowtime, and done once it is read to
        its end for good with nothing held."""
        out = {}
        for part in self.parts.values():
            state = dict(positions.get(part.id, {"seq": None, "done": False}))
            if part.id in staged:
                state["seq"] = staged[part.id]
            if not part.held and part.read_pos is not None:
                state["seq"] = part.read_pos
            state["top_us"] = part.top_us
            state["done"] = bool(state.get("done")) or (part.finished and not part.held)
            out[part.id] = state
        return out


def record_parser(schema: pa.Schema, rowtime: str, arrival: bool = False, alias: str = ""):
    """How a log input (a Kinesis stream or a Kafka topic, as `InputSpec`) turns its records into
    staged rows: `parse(datas, fills, where)`, each record's data one JSON object, and `fills`
    the columns its metadata gives (ARRIVED: its arrival instant, the rowtime of an
    arrival-ordered input; a name starting with '?': only where the value gave none)."""
    def parse(datas: list[bytes], fills: dict, where: str) -> pa.Table:
        text = b"\n".join(d.rstrip(b"\r\n") for d in datas) + b"\n"
        table = read_text(text, "json", schema)
        if table.num_rows != len(datas):
            raise ValueError(f"input {alias}: {where}: each record must hold one JSON object "
                             f"({len(datas)} records gave {table.num_rows} rows)")
        table = conform(table, schema, rowtime, where)
        # the records' metadata (arrival, key, partition, ...): columns their values do not hold
        for column, values in fills.items():
            if column == ARRIVED:
                column = rowtime if arrival else None  # arrival order: the records'
            where_null = column is not None and column.startswith("?")  # only where the value gave none
            column = column[1:] if where_null else column
            if column in table.column_names:
                i = table.column_names.index(column)
                filled = _filled(values, table.schema.field(i).type, column, where)
                if where_null:
                    filled = pc.if_else(pc.is_null(table.column(i)), filled, table.column(i))
                table = table.set_column(i, column, filled)
        return table

    return parse


def _filled(values: list, kind: pa.DataType, column: str, where: str) -> pa.Array:
    """A column filled from records' metadata: instants in µs, or values as JSON reads them (a
    key `42` into an INT, `{"id": 1}` into a STRUCT)."""
    if pa.types.is_timestamp(kind):
        return pa.array(values, pa.int64()).cast(kind)
    lines = "".join(json.dumps({"v": v}, default=str) + "\n" for v in values).encode()
    one = pa.schema([pa.field("v", kind)])
    return conform(read_text(lines, "json", one), one, "v", f"{where} ({column})").column("v").combine_chunks()
