"""The keyed probe of the batch interval join (`lower.batch_join`): one hash bucket of the join
keys, joined in a Spark task from an index of the retained rows that the task's Python worker
keeps between micro-batches.

The batch interval join joins each micro-batch's new rows with the rows still in range, which
its Spark jobs read back from the staged steps: in a steady stream every micro-batch scanned the
whole window to find the partners of a second of rows (docs/runtime.md). Here each task keeps,
per input and bucket, the rows of the retained steps sorted by a hash of their key (`Kept`,
in a process-wide cache), so a micro-batch costs its new rows: it reads the new steps, finds each
new row's candidates by binary search, and drops the steps that left the range.

The staged steps stay the only state. A task is told which steps are retained and which are new
(the sink records them in its checkpoint); the cache is checked against them (a step's path,
inode, size and modification time) and reads what it lacks, so a task on a worker that has not
seen the bucket before, or after a restart, gives the same rows (slower). No Spark here.

Rows: key equality on every key pair (NULL never matches) and `low <= R.rowtime - L.rowtime <=
high` (µs); pairs of a new row with any row, each once; preserved rows that leave in this
micro-batch without a partner among the other input's retained and new rows, NULL-extended.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.io.formats import BOUND

CACHE_ROWS = 20_000_000  # the most rows the cache of one Python worker holds (least recently used out)
_LOWEST = -(1 << 62)


@dataclass(frozen=True)
class Side:
    """One input as the probe reads it: its staged step files, key columns (in key-pair order),
    rowtime column, and the columns it carries to the output (as `flat` names)."""

    steps_dir: str
    keys: tuple[str, ...]
    rowtime: str
    columns: tuple[str, ...]
    flat: tuple[str, ...]
    types: tuple[pa.DataType, ...]  # the carried columns' types (NULL-extended rows)

    def path(self, step: int) -> str:
        return os.path.join(self.steps_dir, f"{step:08d}.parquet")


@dataclass(frozen=True)
class Probe:
    """One micro-batch's join, as every task of it gets it."""

    sides: tuple[Side, Side]
    low_us: int
    high_us: int
    keeps: tuple[bool, bool]  # LEFT / RIGHT / FULL: the preserved inputs
    old: tuple[tuple[int, ...], tuple[int, ...]]  # retained steps, per input
    new: tuple[tuple[int, ...], tuple[int, ...]]  # new steps, per input
    leave: tuple[tuple[int, int], tuple[int, int]]  # (was, now): the rows that leave, per input
    buckets: int


class Kept:
    """An input's rows of one bucket from a set of steps: an index sorted by key hash (`hash`,
    `time`, `step`, `valid`, and `row`, the row's place in its step) and each step's carried
    columns as read (`take` gathers them).

    A step arriving merges its rows into the index and a step leaving filters them out: both cost
    the window's rows in numbers (a few arrays of int64), never in the carried columns, which stay
    where they were read. (Taking the whole window's columns again at every change made keeping
    the index two thirds of the probe's CPU at a steady 10K rows/s per stream, 2026-11-26.)"""

    def __init__(self, side: Side):
        self.side = side
        self.signatures: dict[int, tuple] = {}
        self.hash = np.empty(0, np.uint64)
        self.time = np.empty(0, np.int64)
        self.step = np.empty(0, np.int64)
        self.row = np.empty(0, np.int64)
        self.valid = np.empty(0, bool)  # every key non-NULL
        self.steps: dict[int, pa.Table] = {}  # the carried columns, then the keys, of each step's rows here
        self._payload: tuple | None = None  # (the steps' tables as one, step numbers, their first rows): `take`

    def __len__(self) -> int:
        return len(self.time)

    def sync(self, steps: set[int], bucket: int, buckets: int) -> None:
        """Hold exactly the rows of `steps` in the bucket: drop the others, read the missing ones."""
        wanted = {}
        for step in steps:
            st = os.stat(self.side.path(step))
            wanted[step] = (st.st_ino, st.st_size, st.st_mtime_ns)
        stale = [s for s, sig in self.signatures.items() if wanted.get(s) != sig]
        if stale:
            if len(self):
                self._keep(~np.isin(self.step, np.array(stale, np.int64)))
            for s in stale:
                del self.signatures[s]
                self.steps.pop(s, None)
        missing = sorted(s for s in wanted if s not in self.signatures)
        for s in missing:
            self._add(s, self._read(s, bucket, buckets))
            self.signatures[s] = wanted[s]
        if stale or missing:
            self._payload = None

    def _read(self, step: int, bucket: int, buckets: int) -> pa.Table:
        import pyarrow.parquet as pq

        table = pq.read_table(self.side.path(step), columns=[*self._names(), BOUND])
        table = table.filter(pc.invert(pc.fill_null(table[BOUND], False)))
        hashes, valid = key_hash(table, self.side.keys)
        mine = np.flatnonzero((hashes % np.uint64(buckets)) == np.uint64(bucket))
        return table.select(self._names()).take(mine).combine_chunks() \
            .append_column("__hash", pa.array(hashes[mine])).append_column("__valid", pa.array(valid[mine]))

    def _add(self, step: int, table: pa.Table) -> None:
        """Merge a step's rows into the index (sorted by hash; a step's rows after the equal hashes
        already there)."""
        hashes = table["__hash"].to_numpy()
        order = np.argsort(hashes, kind="stable")
        new = {"hash": hashes[order], "time": pc.cast(table[self.side.rowtime], pa.int64()).to_numpy()[order],
               "step": np.full(len(order), step, np.int64), "row": order.astype(np.int64),
               "valid": table["__valid"].to_numpy(zero_copy_only=False)[order]}
        at = np.searchsorted(self.hash, new["hash"], "right") + np.arange(len(order))
        mask = np.zeros(len(self) + len(order), bool)
        mask[at] = True
        for name, values in new.items():
            merged = np.empty(len(mask), values.dtype)
            merged[mask], merged[~mask] = values, getattr(self, name)
            setattr(self, name, merged)
        self.steps[step] = table.drop_columns(["__hash", "__valid"])

    def _keep(self, rows: np.ndarray) -> None:
        for name in ("hash", "time", "step", "row", "valid"):
            setattr(self, name, getattr(self, name)[rows])

    def take(self, column: str, rows: np.ndarray) -> pa.Array:
        """The values of a carried (or key) column at these index rows."""
        if self._payload is None:
            order = sorted(self.steps)
            sizes = np.array([self.steps[s].num_rows for s in order], np.int64)
            table = pa.concat_tables([self.steps[s] for s in order]) if order else None
            self._payload = (table, np.array(order, np.int64), np.cumsum(sizes) - sizes)
        table, order, starts = self._payload
        at = starts[np.searchsorted(order, self.step[rows])] + self.row[rows]
        return table[column].take(at).combine_chunks()

    def _names(self) -> list[str]:
        side = self.side
        return list(dict.fromkeys([*side.columns, *side.keys, side.rowtime]))


def key_hash(table: pa.Table, keys: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A 64-bit hash of each row's key (pandas' stable hash, the same in every process) and
    whether every key column is non-NULL. Values are normalised first (integers, booleans and
    timestamps as int64, strings as str), so a step with a NULL key hashes like one without."""
    columns, valid = {}, np.ones(table.num_rows, bool)
    for i, k in enumerate(keys):
        column = table[k]
        valid &= ~np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False))
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            columns[f"k{i}"] = pc.fill_null(column, "").to_numpy(zero_copy_only=False)
        else:
            columns[f"k{i}"] = pc.fill_null(pc.cast(column, pa.int64()), 0).to_numpy()
    return pd.util.hash_pandas_object(pd.DataFrame(columns), index=False).to_numpy(np.uint64), valid


_CACHE: OrderedDict[tuple, Kept] = OrderedDict()


def kept(side: Side, steps: set[int], bucket: int, buckets: int) -> Kept:
    """The cached rows of `steps` of this input and bucket (least recently used entries leave once
    the cache holds more than CACHE_ROWS rows)."""
    key = (side.steps_dir, side.columns, side.keys, bucket, buckets)
    for split in [k for k in _CACHE if k[:3] == key[:3] and k[4] != buckets]:
        del _CACHE[split]  # the probe's tasks changed (lower.batch_join): the other split is read no more
    entry = _CACHE.pop(key, None)
    entry = Kept(side) if entry is None else entry  # (an entry holding no rows is kept too: it knows its steps)
    entry.sync(steps, bucket, buckets)
    _CACHE[key] = entry
    total = sum(len(e) for e in _CACHE.values())
    while total > CACHE_ROWS and len(_CACHE) > 1:
        _, old = _CACHE.popitem(last=False)
        total -= len(old)
    return entry


def probe(p: Probe, bucket: int) -> pa.Table:
    """The output rows of bucket `bucket` (flat columns of both inputs; NULL for an absent side)."""
    left = kept(p.sides[0], {*p.old[0], *p.new[0]}, bucket, p.buckets)
    right = kept(p.sides[1], {*p.old[1], *p.new[1]}, bucket, p.buckets)
    new_l, new_r = np.isin(left.step, np.array(p.new[0], np.int64)), np.isin(right.step, np.array(p.new[1], np.int64))
    # new L rows with every R row; new R rows with the old L rows: each pair once
    li1, ri1 = _candidates(left, right, np.flatnonzero(new_l & left.valid))
    ri2, li2 = _candidates(right, left, np.flatnonzero(new_r & right.valid))
    old_l = ~new_l[li2]
    li, ri = np.concatenate([li1, li2[old_l]]), np.concatenate([ri1, ri2[old_l]])
    li, ri = _matching(p, left, right, li, ri)
    parts = [_rows(p, left, li, right, ri)]
    for n, (mine, other, is_new) in enumerate(((left, right, new_l), (right, left, new_r))):
        was, now = p.leave[n]
        if not p.keeps[n] or now <= _LOWEST:
            continue
        leaving = np.flatnonzero((mine.time < now) & (is_new | (mine.time >= was)))
        if not len(leaving):
            continue
        a, b = _candidates(mine, other, leaving[mine.valid[leaving]])
        pairs = _matching(p, left, right, a, b) if n == 0 else _matching(p, left, right, b, a)
        alone = np.setdiff1d(leaving, pairs[n])
        parts.append(_rows(p, left, alone, None, None) if n == 0 else _rows(p, None, None, right, alone))
    return pa.concat_tables(parts)


def _candidates(mine: Kept, other: Kept, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of `mine`, rows of `other`) whose key hashes are equal, for the given rows of `mine`."""
    if not len(rows) or not len(other):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    hashes = mine.hash[rows]
    lo = np.searchsorted(other.hash, hashes, "left")
    hi = np.searchsorted(other.hash, hashes, "right")
    counts = hi - lo
    total = int(counts.sum())
    if not total:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.cumsum(counts) - counts
    theirs = np.arange(total, dtype=np.int64) - np.repeat(starts - lo, counts)
    return np.repeat(rows, counts).astype(np.int64), theirs


def _matching(p: Probe, left: Kept, right: Kept, li: np.ndarray, ri: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs within the time range whose keys are equal (not only their hashes)."""
    if not len(li):
        return li, ri
    gap = right.time[ri] - left.time[li]
    ok = (gap >= p.low_us) & (gap <= p.high_us) & left.valid[li] & right.valid[ri]
    li, ri = li[ok], ri[ok]
    if len(li):
        same = np.ones(len(li), bool)
        for a, b in zip(p.sides[0].keys, p.sides[1].keys, strict=True):
            eq = pc.equal(left.take(a, li), right.take(b, ri))
            same &= np.asarray(pc.fill_null(eq, False).to_numpy(zero_copy_only=False))
        li, ri = li[same], ri[same]
    return li, ri


def _rows(p: Probe, left: Kept | None, li, right: Kept | None, ri) -> pa.Table:
    n = len(li) if li is not None else len(ri)
    arrays, names = [], []
    for side, kept_, rows in ((p.sides[0], left, li), (p.sides[1], right, ri)):
        for column, name, kind in zip(side.columns, side.flat, side.types, strict=True):
            arrays.append(kept_.take(column, rows) if kept_ is not None and kept_.steps else pa.nulls(n, kind))
            names.append(name)
    return pa.Table.from_arrays(arrays, names)
