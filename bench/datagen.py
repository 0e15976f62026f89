"""Fixed benchmark data and its exact join counts.

Two streams `l` and `r` of `rows` rows each, JSON Lines sorted by rowtime (one file per stream,
as a producer appending to a log would write it): `{"rowtime": "2024-01-01 00:00:00.000",
"k": 7, "v": 3}`. Keys are uniform over `keys`; rowtimes uniform over a span chosen so that a
row has about `matches` partners with the same key within +-`window_ms` on the other stream.

`exact_counts` counts the interval join exactly (numpy, sorted composite keys): the pairs, and
the rows of each side with no partner (so INNER = pairs, FULL = pairs + unmatched l + unmatched
r). Every benchmark run is checked against it.

The three-stream workload adds a stream `m` (`generate_three`), written into the same folder the
first time it is asked for (the files of `l` and `r` and `counts.json` stay as they are), with the
exact count of the three-way INNER interval join `l JOIN m JOIN r`, both windows around `l`'s
rowtime (`three_way_count`: per l row, its m partners times its r partners).

The snapshot workload joins `l` with a table of `TABLE_ROWS` rows (`generate_table`: one JSON
Lines file, `{"id": 0, "name": "product 0", "price": 12.34}`, written once): its ids skip every
number that is 10 mod 11, so about 9% of stream rows find no table row; the exact count is the
stream rows whose key is an id.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

BASE = dt.datetime(2024, 1, 1)
KEY_SHIFT = 1 << 42  # composite (key, rowtime ms): rowtime spans stay far below 2^42 ms


@dataclass(frozen=True)
class Spec:
    rows: int  # per stream
    keys: int
    matches: float  # expected partners of a row
    window_ms: int = 60_000
    seed: int = 20261124

    @property
    def span_ms(self) -> int:
        # partners of a row: rows/keys per key per side, spread over the span, within 2*window
        return max(1, int(2 * self.window_ms * self.rows / (self.keys * self.matches)))

    @property
    def name(self) -> str:
        return f"n{self.rows}-k{self.keys}-m{self.matches:g}-w{self.window_ms}"


def _stream(spec: Spec, which: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(spec.seed * 10 + which)
    rowtime = np.sort(rng.integers(0, spec.span_ms, spec.rows, dtype=np.int64))
    return rowtime, rng.integers(0, spec.keys, spec.rows, dtype=np.int64), rng.integers(0, 1000, spec.rows, dtype=np.int64)


def _write(path: Path, rowtime: np.ndarray, key: np.ndarray, value: np.ndarray) -> None:
    seconds = rowtime // 1000
    texts = {}  # one datetime format per distinct second
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as out:
        for t, s, k, v in zip(rowtime.tolist(), seconds.tolist(), key.tolist(), value.tolist(), strict=True):
            text = texts.get(s)
            if text is None:
                text = texts[s] = (BASE + dt.timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")
            out.write(f'{{"rowtime":"{text}.{t % 1000:03d}","k":{k},"v":{v}}}\n')
    tmp.rename(path)


def exact_counts(spec: Spec) -> dict:
    lt, lk, _ = _stream(spec, 0)
    rt, rk, _ = _stream(spec, 1)
    lc, rc = np.sort(lk * KEY_SHIFT + lt), np.sort(rk * KEY_SHIFT + rt)
    w = spec.window_ms
    per_l = np.searchsorted(rc, lc + w, side="right") - np.searchsorted(rc, lc - w, side="left")
    per_r = np.searchsorted(lc, rc + w, side="right") - np.searchsorted(lc, rc - w, side="left")
    pairs = int(per_l.sum())
    assert pairs == int(per_r.sum())
    unmatched_l, unmatched_r = int((per_l == 0).sum()), int((per_r == 0).sum())
    return {"pairs": pairs, "unmatched_l": unmatched_l, "unmatched_r": unmatched_r,
            "INNER": pairs, "LEFT": pairs + unmatched_l, "RIGHT": pairs + unmatched_r,
            "FULL": pairs + unmatched_l + unmatched_r}


def _partners(lc: np.ndarray, other: np.ndarray, w: int) -> np.ndarray:
    """Per composite (key, rowtime) of `lc`: the rows of sorted `other` with that key and a rowtime within +-w."""
    return np.searchsorted(other, lc + w, side="right") - np.searchsorted(other, lc - w, side="left")


def three_way_count(spec: Spec) -> int:
    """`l JOIN m ON l.k = m.k AND m.rowtime BETWEEN l.rowtime - w AND l.rowtime + w JOIN r ON l.k =
    r.k AND r.rowtime BETWEEN l.rowtime - w AND l.rowtime + w`: the sum over l rows of (m
    partners) x (r partners)."""
    lt, lk, _ = _stream(spec, 0)
    rt, rk, _ = _stream(spec, 1)
    mt, mk, _ = _stream(spec, 2)
    lc = lk * KEY_SHIFT + lt
    w = spec.window_ms
    per_m = _partners(lc, np.sort(mk * KEY_SHIFT + mt), w)
    per_r = _partners(lc, np.sort(rk * KEY_SHIFT + rt), w)
    return int((per_m * per_r).sum())


def rows_window_count(spec: Spec, preceding: int = 0) -> int:
    """`l OVER (PARTITION BY k ROWS n PRECEDING) JOIN r OVER (PARTITION BY k ROWS n PRECEDING) ON
    l.k = r.k`: in SEMANTICS.md §2 order (rowtime, l before r, position in the file), each row
    pairs with the other stream's rows present when it arrives, the last n+1 of its key; so the
    count is, per row, min(n+1, the other stream's earlier rows of its key)."""
    lt, lk, _ = _stream(spec, 0)
    rt, rk, _ = _stream(spec, 1)
    key, time = np.r_[lk, rk], np.r_[lt, rt]
    side = np.r_[np.zeros(len(lt), np.int64), np.ones(len(rt), np.int64)]
    position = np.r_[np.arange(len(lt)), np.arange(len(rt))]
    order = np.lexsort((position, side, time, key))
    key, side = key[order], side[order]
    start = np.r_[True, key[1:] != key[:-1]]  # the first event of each key
    total = 0
    first = np.maximum.accumulate(np.where(start, np.arange(len(side)), 0))  # each event's key's first event
    for mine in (0, 1):  # rows of `mine`: the other side's rows before them, within their key
        other = (side != mine).astype(np.int64)
        earlier = np.cumsum(other) - other  # other-side events before each event, overall
        before = earlier - earlier[first]
        total += int(np.minimum(preceding + 1, before[side == mine]).sum())
    return total


def generate(root: Path, spec: Spec) -> tuple[Path, Path, dict]:
    """(folder of l, folder of r, exact counts): written once per spec, reused after."""
    folder = root / spec.name
    done = folder / "counts.json"
    if not done.exists():
        for which, name in enumerate(("l", "r")):
            (folder / name).mkdir(parents=True, exist_ok=True)
            _write(folder / name / "part-0.json", *_stream(spec, which))
        done.write_text(json.dumps({"spec": asdict(spec), **exact_counts(spec)}, indent=1))
    counts = json.loads(done.read_text())
    return folder / "l", folder / "r", counts


def generate_three(root: Path, spec: Spec) -> tuple[Path, Path, Path, dict]:
    """(folder of l, of m, of r, exact counts with "INNER3"): `generate`'s l and r plus a stream
    m, written beside them once (the first three-stream run), reused after."""
    l_dir, r_dir, counts = generate(root, spec)
    folder = l_dir.parent
    done = folder / "counts-three.json"
    if not done.exists():
        (folder / "m").mkdir(exist_ok=True)
        _write(folder / "m" / "part-0.json", *_stream(spec, 2))
        done.write_text(json.dumps({"spec": asdict(spec), "INNER3": three_way_count(spec)}, indent=1))
    return l_dir, folder / "m", r_dir, {**counts, **json.loads(done.read_text())}


TABLE_ROWS = 1_000_000


def table_ids(rows: int = TABLE_ROWS) -> np.ndarray:
    """The snapshot table's ids: the first `rows` non-negative integers that are not 10 mod 11."""
    ids = np.arange(rows * 11 // 10 + 11, dtype=np.int64)
    return ids[ids % 11 != 10][:rows]


def generate_table(root: Path, spec: Spec) -> tuple[Path, Path, dict]:
    """(folder of l, folder of the table, exact counts with "SNAPSHOT": `l JOIN t ON l.k = t.id`):
    the table is written once (it does not depend on the spec), the count once per spec."""
    l_dir, _, counts = generate(root, spec)
    table = root / f"table-{TABLE_ROWS}"
    if not (table / "part-0.json").exists():
        table.mkdir(parents=True, exist_ok=True)
        ids = table_ids()
        cents = np.random.default_rng(spec.seed).integers(100, 100_000, len(ids))
        tmp = table / "part-0.tmp"
        with tmp.open("w") as out:
            for i, c in zip(ids.tolist(), cents.tolist(), strict=True):
                out.write(f'{{"id":{i},"name":"product {i}","price":{c // 100}.{c % 100:02d}}}\n')
        tmp.rename(table / "part-0.json")
    done = l_dir.parent / "counts-snapshot.json"
    if not done.exists():
        _, lk, _ = _stream(spec, 0)
        done.write_text(json.dumps({"spec": asdict(spec), "SNAPSHOT": int(np.isin(lk, table_ids()).sum())}, indent=1))
    return l_dir, table, {**counts, **json.loads(done.read_text())}


def changed_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the ids the changing table updates: every 10th; the ids it deletes: those that are 5 mod 20)."""
    return ids[ids % 10 == 0], ids[ids % 20 == 5]


def generate_changing_table(root: Path, spec: Spec) -> tuple[Path, Path, dict]:
    """(folder of l, folder of the changing table, exact counts with "CHANGING"): the table of
    `generate_table` as Debezium JSON events, one file in order: a create for every row, then an
    update of every 10th id's price, then a delete of every id that is 5 mod 20. The regular join
    `l JOIN t ON l.k = t.id` over it folds to the stream rows whose key is an id left at the end
    (a changelog: each update withdraws a joined row and adds it again, each delete withdraws)."""
    l_dir, _, counts = generate(root, spec)
    table = root / f"table-changes-{TABLE_ROWS}"
    ids = table_ids()
    updated, deleted = changed_ids(ids)
    if not (table / "part-0.json").exists():
        table.mkdir(parents=True, exist_ok=True)
        cents = dict(zip(ids.tolist(), np.random.default_rng(spec.seed).integers(100, 100_000, len(ids)).tolist(), strict=True))

        def row(i: int, c: int) -> str:
            return f'{{"id":{i},"name":"product {i}","price":{c // 100}.{c % 100:02d}}}'

        tmp = table / "part-0.tmp"
        with tmp.open("w") as out:
            for i, c in cents.items():
                out.write(f'{{"op":"c","before":null,"after":{row(i, c)}}}\n')
            for i in updated.tolist():
                out.write(f'{{"op":"u","before":{row(i, cents[i])},"after":{row(i, cents[i] + 1)}}}\n')
            for i in deleted.tolist():
                out.write(f'{{"op":"d","before":{row(i, cents[i])},"after":null}}\n')
        tmp.rename(table / "part-0.json")
    done = l_dir.parent / "counts-changing.json"
    if not done.exists():
        _, lk, _ = _stream(spec, 0)
        left = np.setdiff1d(ids, deleted)
        done.write_text(json.dumps({"spec": asdict(spec), "CHANGING": int(np.isin(lk, left).sum())}, indent=1))
    return l_dir, table, {**counts, **json.loads(done.read_text())}
