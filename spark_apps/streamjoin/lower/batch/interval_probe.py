"""The keyed probe of the batch interval join (`lower.batch.batch_join`): one hash bucket of the join
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
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.io.formats.files import BOUND

RUN_ROWS = 2_000_000  # a run of the index grows by merges up to about this many rows (Kept)


def _memory_share() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError, AttributeError):
        return 8 << 30


CACHE_BYTES = min(8 << 30, _memory_share())  # what one Python worker's cache holds at most (least recently used out)
_LOWEST = -(1 << 62)
_FIELDS = ("hash", "time", "step", "prow", "valid")


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
    epoch: str = ""  # the run that asks (lower.batch.batch_join: one per start): a step it retains is as it was read


class Run:
    """Part of an index (`Kept`): rows sorted by key hash (`hash`, `time`, `step`, `valid`, and
    `prow`, the row's place in `payload`; step and place 32-bit: a run holds a few million rows,
    and at a full 1-hour window every byte a row is 72 MB), and `payload`, the carried and key columns of its
    steps' rows one step after another (`spans`: each step's first row there and its rows)."""

    __slots__ = ("hash", "time", "step", "prow", "valid", "payload", "spans", "dead", "tmin", "tmax")

    def __init__(self, arrays: dict[str, np.ndarray], payload: pa.Table, spans: dict[int, tuple[int, int]]):
        for name in _FIELDS:
            setattr(self, name, arrays[name])
        self.payload, self.spans = payload, spans
        self.dead: set[int] = set()  # steps that left whose rows are still here (`live`)
        self.tmin = int(self.time.min()) if len(self.time) else 0
        self.tmax = int(self.time.max()) if len(self.time) else 0

    @classmethod
    def of(cls, tables: list[tuple[int, pa.Table]]) -> Run:
        """One run of these steps' rows (as `Kept._read` gives them)."""
        table = tables[0][1] if len(tables) == 1 else pa.concat_tables([t for _, t in tables]).combine_chunks()
        sizes = np.array([t.num_rows for _, t in tables], np.int64)
        starts = np.cumsum(sizes) - sizes
        hashes = table["__hash"].to_numpy()
        order = np.argsort(hashes, kind="stable")
        arrays = {"hash": hashes[order], "time": table["__time"].to_numpy()[order],
                  "step": np.repeat(np.array([s for s, _ in tables], np.int32), sizes)[order],
                  "prow": order.astype(np.int32), "valid": table["__valid"].to_numpy(zero_copy_only=False)[order]}
        spans = {s: (int(a), int(n)) for (s, _), a, n in zip(tables, starts, sizes, strict=True)}
        return cls(arrays, table.drop_columns(["__hash", "__valid", "__time"]), spans)

    def __len__(self) -> int:
        return len(self.time)

    @property
    def live(self) -> int:
        return len(self) - sum(self.spans[s][1] for s in self.dead)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in _FIELDS) + self.payload.nbytes

    def alive(self) -> np.ndarray | None:
        """Which rows are of steps still held (None: all)."""
        return ~_among(self.step, self.dead) if self.dead else None

    def where(self, mask: np.ndarray) -> np.ndarray:
        """The places of the rows of steps still held where `mask` is true."""
        alive = self.alive()
        return np.flatnonzero(mask if alive is None else mask & alive)

    def merge(self, newer: Run) -> Run:
        """This run's rows and `newer`'s as one run (`newer`'s after equal hashes here)."""
        shift = self.payload.num_rows
        at = np.searchsorted(self.hash, newer.hash, "right") + np.arange(len(newer))
        mask = np.ones(len(self) + len(newer), bool)
        mask[at] = False
        rest = np.flatnonzero(mask)  # (the places of this run's rows: one boolean pass, not one per field)
        arrays = {}
        for name in _FIELDS:
            theirs = getattr(newer, name) + shift if name == "prow" else getattr(newer, name)
            merged = np.empty(len(mask), theirs.dtype)
            merged[at], merged[rest] = theirs, getattr(self, name)
            arrays[name] = merged
        spans = {**self.spans, **{s: (a + shift, n) for s, (a, n) in newer.spans.items()}}
        run = Run(arrays, pa.concat_tables([self.payload, newer.payload]).combine_chunks(), spans)
        run.dead = self.dead | newer.dead
        return run

    def compact(self) -> Run:
        """This run without the rows of its dead steps."""
        keep = self.where(np.ones(len(self), bool))  # (one boolean pass, then a gather per field)
        arrays = {name: getattr(self, name)[keep] for name in _FIELDS}
        steps = sorted((a, s, n) for s, (a, n) in self.spans.items() if s not in self.dead)
        parts, spans, at = [], {}, 0
        for a, s, n in steps:
            parts.append(self.payload.slice(a, n))
            spans[s] = (at, n)
            at += n
        order = np.array([s for _, s, _ in steps], np.int64)
        shift = np.array([spans[s][0] - a for a, s, _ in steps], np.int64)
        if len(order):
            sort = np.argsort(order)
            arrays["prow"] = (arrays["prow"] + shift[sort][np.searchsorted(order[sort], arrays["step"])]).astype(np.int32)
        payload = pa.concat_tables(parts).combine_chunks() if parts else self.payload.slice(0, 0)
        return Run(arrays, payload, spans)


@dataclass
class Rows:
    """Some rows of a `Kept`: their index fields and the run (`run`: its place in `Kept.runs`)."""

    hash: np.ndarray
    time: np.ndarray
    step: np.ndarray
    prow: np.ndarray
    valid: np.ndarray
    run: np.ndarray

    def __len__(self) -> int:
        return len(self.time)

    def __getitem__(self, at) -> Rows:
        return Rows(*(getattr(self, name)[at] for name in (*_FIELDS, "run")))

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        if not parts:
            return Rows(*(np.empty(0, t) for t in (np.uint64, np.int64, np.int32, np.int32, bool, np.int64)))
        return Rows(*(np.concatenate([getattr(p, name) for p in parts]) for name in (*_FIELDS, "run")))


class Kept:
    """An input's rows of one bucket from a set of steps: an index sorted by key hash, in runs
    (`Run`) that merge as a binary counter does up to RUN_ROWS rows each.

    A step arriving is a run of its own and merges with runs no larger than itself, so a row is
    merged a few times (log2 of RUN_ROWS over a step's rows), not once for every later step; a step
    leaving is marked dead in its run, whose rows are filtered out once half of them are dead.
    A micro-batch thus costs its new rows and a search in each run, whatever the window holds:
    one index merged with every step cost a 1-hour window (36M rows an input) seconds a step."""

    def __init__(self, side: Side):
        self.side = side
        # the rowtime, when it is not a key, is held once: as the index's `time` (µs of its type), not in the payload
        self.time_type = dict(zip(side.columns, side.types, strict=True)).get(side.rowtime) if side.rowtime not in side.keys else None
        self.signatures: dict[int, tuple] = {}
        self.runs: list[Run] = []
        self.epoch: str | None = None

    def __len__(self) -> int:
        return sum(run.live for run in self.runs)

    @property
    def nbytes(self) -> int:
        return sum(run.nbytes for run in self.runs)

    def sync(self, steps: set[int], new: set[int], bucket: int, buckets: int, epoch: str = "") -> None:
        """Hold exactly the rows of `steps` in the bucket: drop the others, read the missing ones.
        New steps, and every step when another run (`epoch`) asks, are checked against their files
        (a step staged again after a crash has another inode, size or time); a retained step a run
        has asked for before is as it was read."""
        check = {s for s in steps if s in new or s not in self.signatures or epoch != self.epoch}
        wanted = {}
        for step in check:
            st = os.stat(self.side.path(step))
            wanted[step] = (st.st_ino, st.st_size, st.st_mtime_ns)
        for s in [s for s, sig in self.signatures.items() if s not in steps or wanted.get(s, sig) != sig]:
            self._drop(s)
        missing = sorted(s for s in steps if s not in self.signatures)
        tables = [(s, self._read(s, bucket, buckets)) for s in missing]
        for s in missing:
            self.signatures[s] = wanted[s]
        self._load([(s, t) for s, t in tables if t.num_rows])
        self.epoch = epoch

    def _read(self, step: int, bucket: int, buckets: int) -> pa.Table:
        import pyarrow.parquet as pq

        table = pq.read_table(self.side.path(step), columns=[*self._names(), BOUND])
        table = table.filter(pc.invert(pc.fill_null(table[BOUND], False)))
        hashes, valid = key_hash(table, self.side.keys)
        mine = np.flatnonzero((hashes % np.uint64(buckets)) == np.uint64(bucket))
        held = [n for n in self._names() if self.time_type is None or n != self.side.rowtime]
        return table.select(held).take(mine).combine_chunks() \
            .append_column("__hash", pa.array(hashes[mine])).append_column("__valid", pa.array(valid[mine])) \
            .append_column("__time", pc.cast(table[self.side.rowtime], pa.int64()).take(mine))

    def _drop(self, step: int) -> None:
        del self.signatures[step]
        for n, run in enumerate(self.runs):
            if step in run.spans and step not in run.dead:
                run.dead.add(step)
                if not run.live:
                    del self.runs[n]
                elif 2 * run.live <= len(run):
                    self.runs[n] = run.compact()
                return

    def _load(self, tables: list[tuple[int, pa.Table]]) -> None:
        """Add the steps' rows: a run per step while a few arrive, runs of about RUN_ROWS rows when
        many do (a cold start). A run still holding a dead copy of such a step (one staged again,
        or named again after it left) drops it first: a step is in one run only."""
        steps = {s for s, _ in tables}
        self.runs = [r for r in (run.compact() if run.dead & steps else run for run in self.runs) if len(r)]
        group: list[tuple[int, pa.Table]] = []
        for item in tables:
            group.append(item)
            if len(tables) <= 2 or sum(t.num_rows for _, t in group) >= RUN_ROWS:
                self.runs.append(Run.of(group))
                self._settle()
                group = []
        if group:
            self.runs.append(Run.of(group))
            self._settle()

    def _settle(self) -> None:
        runs = self.runs
        while len(runs) > 1 and len(runs[-2]) < RUN_ROWS and len(runs[-2]) <= len(runs[-1]):
            newer = runs.pop()
            runs[-1] = runs[-1].merge(newer)

    def rows_of(self, steps: set[int]) -> Rows:
        """The rows of these steps."""
        parts = []
        for n, run in enumerate(self.runs):
            if any(s in run.spans and s not in run.dead for s in steps):
                parts.append(self._part(n, run.where(_among(run.step, steps))))
        return Rows.concat(parts)

    def leaving(self, was: int, now: int, new: set[int]) -> Rows:
        """The rows with rowtimes below `now` that were not below `was` or are new."""
        parts = []
        for n, run in enumerate(self.runs):
            fresh = any(s in run.spans for s in new)
            if not len(run) or run.tmin >= now or (run.tmax < was and not fresh):
                continue
            mask = (run.time < now) & ((run.time >= was) | (_among(run.step, new) if fresh else False))
            parts.append(self._part(n, run.where(mask)))
        return Rows.concat(parts)

    def find(self, hashes: np.ndarray) -> tuple[np.ndarray, Rows]:
        """(places in `hashes`, rows here): every held row whose key hash is one of `hashes`."""
        if not len(hashes) or not self.runs:
            return np.empty(0, np.int64), Rows.concat([])
        order = np.argsort(hashes, kind="stable")
        needles = hashes[order]
        places, parts = [], []
        for n, run in enumerate(self.runs):
            if not len(run):
                continue
            lo = np.searchsorted(run.hash, needles, "left")
            found = np.flatnonzero(run.hash[np.minimum(lo, len(run) - 1)] == needles)
            counts = np.zeros(len(needles), np.int64)  # (the upper bound only for the needles present)
            counts[found] = np.searchsorted(run.hash, needles[found], "right") - lo[found]
            total = int(counts.sum())
            if not total:
                continue
            starts = np.cumsum(counts) - counts
            theirs = np.arange(total, dtype=np.int64) - np.repeat(starts - lo, counts)
            mine = np.repeat(order, counts)
            if run.dead:
                alive = ~_among(run.step[theirs], run.dead)
                mine, theirs = mine[alive], theirs[alive]
            places.append(mine)
            parts.append(self._part(n, theirs))
        return (np.concatenate(places) if places else np.empty(0, np.int64)), Rows.concat(parts)

    def _part(self, n: int, at: np.ndarray) -> Rows:
        run = self.runs[n]
        return Rows(*(getattr(run, name)[at] for name in _FIELDS), np.full(len(at), n, np.int64))

    def take(self, column: str, rows: Rows) -> pa.Array:
        """The values of a carried (or key) column at these rows (at least one)."""
        if self.time_type is not None and column == self.side.rowtime:
            return pa.array(rows.time, pa.int64()).cast(self.time_type)
        if (rows.run == rows.run[0]).all():
            return self.runs[int(rows.run[0])].payload[column].take(rows.prow).combine_chunks()
        order = np.argsort(rows.run, kind="stable")
        runs = rows.run[order]
        cuts = np.flatnonzero(np.diff(runs)) + 1
        pieces = [self.runs[int(runs[part[0]])].payload[column].take(rows.prow[order[part]]).combine_chunks()
                  for part in np.split(np.arange(len(order)), cuts) if len(part)]
        back = np.empty(len(order), np.int64)
        back[order] = np.arange(len(order))
        return pa.concat_arrays(pieces).take(back)

    def _names(self) -> list[str]:
        side = self.side
        return list(dict.fromkeys([*side.columns, *side.keys, side.rowtime]))


def _among(steps: np.ndarray, wanted) -> np.ndarray:
    """Which of `steps` (step numbers) are in `wanted` (a lookup table over their range)."""
    wanted = np.fromiter(wanted, np.int64)
    return np.isin(steps, wanted, kind="table") if len(wanted) else np.zeros(len(steps), bool)


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
_CACHE_LOCK = threading.Lock()  # (in the driver, lower.batch.keyed_probe.DriverProbe, each output's join runs in its own thread)


def kept(side: Side, steps: set[int], new: set[int], bucket: int, buckets: int, epoch: str = "") -> Kept:
    """The cached rows of `steps` of this input and bucket (least recently used entries leave once
    the cache holds more than CACHE_BYTES)."""
    with _CACHE_LOCK:
        return _kept(side, steps, new, bucket, buckets, epoch)


def _kept(side: Side, steps: set[int], new: set[int], bucket: int, buckets: int, epoch: str) -> Kept:
    key = (side.steps_dir, side.columns, side.keys, bucket, buckets)
    for split in [k for k in _CACHE if k[:3] == key[:3] and k[4] != buckets]:
        del _CACHE[split]  # the probe's tasks changed (lower.batch.batch_join): the other split is read no more
    entry = _CACHE.pop(key, None)
    entry = Kept(side) if entry is None else entry  # (an entry holding no rows is kept too: it knows its steps)
    entry.sync(steps, new, bucket, buckets, epoch)
    _CACHE[key] = entry
    total = sum(e.nbytes for e in _CACHE.values())
    while total > CACHE_BYTES and len(_CACHE) > 1:
        _, old = _CACHE.popitem(last=False)
        total -= old.nbytes
    return entry


def probe(p: Probe, bucket: int) -> pa.Table:
    """The output rows of bucket `bucket` (flat columns of both inputs; NULL for an absent side)."""
    new = set(p.new[0]), set(p.new[1])
    left = kept(p.sides[0], {*p.old[0], *new[0]}, new[0], bucket, p.buckets, p.epoch)
    right = kept(p.sides[1], {*p.old[1], *new[1]}, new[1], bucket, p.buckets, p.epoch)
    # new L rows with every R row; new R rows with the old L rows: each pair once
    new_l, new_r = left.rows_of(new[0]), right.rows_of(new[1])
    new_l, new_r = new_l[new_l.valid], new_r[new_r.valid]
    at1, r1 = right.find(new_l.hash)
    at2, l2 = left.find(new_r.hash)
    old = ~_among(l2.step, new[0])
    li, ri = Rows.concat([new_l[at1], l2[old]]), Rows.concat([r1, new_r[at2[old]]])
    ok = _matching(p, left, li, right, ri)
    parts = [_rows(p, left, li[ok], right, ri[ok])]
    for n, (mine, other) in enumerate(((left, right), (right, left))):
        was, now = p.leave[n]
        if not p.keeps[n] or now <= _LOWEST:
            continue
        leaving = mine.leaving(was, now, new[n])
        if not len(leaving):
            continue
        valid = np.flatnonzero(leaving.valid)
        at, theirs = other.find(leaving.hash[valid])
        ours = leaving[valid[at]]
        ok = _matching(p, left, ours, right, theirs) if n == 0 else _matching(p, left, theirs, right, ours)
        alone = np.ones(len(leaving), bool)
        alone[valid[at[ok]]] = False
        parts.append(_rows(p, left, leaving[alone], None, None) if n == 0 else _rows(p, None, None, right, leaving[alone]))
    return pa.concat_tables(parts)


def _matching(p: Probe, left: Kept, li: Rows, right: Kept, ri: Rows) -> np.ndarray:
    """Which candidate pairs are within the time range with equal keys (not only equal hashes)."""
    gap = ri.time - li.time
    ok = (gap >= p.low_us) & (gap <= p.high_us) & li.valid & ri.valid
    at = np.flatnonzero(ok)
    if len(at):
        for a, b in zip(p.sides[0].keys, p.sides[1].keys, strict=True):
            eq = pc.equal(left.take(a, li[at]), right.take(b, ri[at]))
            ok[at] &= np.asarray(pc.fill_null(eq, False).to_numpy(zero_copy_only=False))
    return ok


def _rows(p: Probe, left: Kept | None, li: Rows | None, right: Kept | None, ri: Rows | None) -> pa.Table:
    n = len(li) if li is not None else len(ri)
    arrays, names = [], []
    for side, kept_, rows in ((p.sides[0], left, li), (p.sides[1], right, ri)):
        for column, name, kind in zip(side.columns, side.flat, side.types, strict=True):
            arrays.append(kept_.take(column, rows) if kept_ is not None and n else pa.nulls(n, kind))
            names.append(name)
    return pa.Table.from_arrays(arrays, names)
