"""The keyed probe of the batch interval join (lower.batch.interval_probe): on random steps, keys
(NULLs, two columns), ranges, preserved sides and bucket counts, the union of the buckets' rows is
exactly the brute-force answer; its cache follows the steps it is told about (new, retained,
dropped, rewritten) and gives the same rows as a cold start."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamjoin.lower.batch import interval_probe as ip

TS = pa.timestamp("us", tz="UTC")
COLUMNS = ("k", "s", "rowtime", "v")
TYPES = (pa.int64(), pa.string(), TS, pa.int64())


def _write(folder, step: int, rows: list[tuple]) -> None:
    """rows: (k, s, rowtime µs, v, bound)."""
    folder.mkdir(parents=True, exist_ok=True)
    columns = list(zip(*rows, strict=True)) if rows else [[]] * 5
    table = pa.table({"k": pa.array(columns[0], pa.int64()), "s": pa.array(columns[1], pa.string()),
                      "rowtime": pa.array(columns[2], pa.int64()).cast(TS), "v": pa.array(columns[3], pa.int64()),
                      "_bound": pa.array(columns[4], pa.bool_())})
    pq.write_table(table, folder / f"{step:08d}.parquet")


def _sides(root, keys) -> tuple[ip.Side, ip.Side]:
    return tuple(ip.Side(str(root / alias), keys, "rowtime", COLUMNS, tuple(f"{alias}__{c}" for c in COLUMNS), TYPES)
                 for alias in ("l", "r"))


def _probe(p: ip.Probe) -> list[tuple]:
    return sorted(((r["l__v"], r["r__v"]) for b in range(p.buckets) for r in ip.probe(p, b).to_pylist()), key=str)


def _expected(p: ip.Probe, rows: list[dict[int, list[tuple]]]) -> list[tuple]:
    """The definition, pair by pair: each pair with a new row once; preserved leaving rows alone."""
    keys = [COLUMNS.index(k) for k in p.sides[0].keys]

    def same(a, b):
        return all(a[i] is not None and a[i] == b[i] for i in keys)

    def present(n):
        return [(step in p.new[n], row) for step in (*p.old[n], *p.new[n]) for row in rows[n].get(step, []) if not row[4]]

    left, right = present(0), present(1)
    out = [(lrow[3], rrow[3]) for lnew, lrow in left for rnew, rrow in right
           if (lnew or rnew) and same(lrow, rrow) and p.low_us <= rrow[2] - lrow[2] <= p.high_us]
    for n, (mine, other) in enumerate(((left, right), (right, left))):
        was, now = p.leave[n]
        if not p.keeps[n] or now <= ip._LOWEST:
            continue
        for new, a in mine:
            if a[2] < now and (new or a[2] >= was) and not any(
                    same(a, b) and p.low_us <= ((b[2] - a[2]) if n == 0 else (a[2] - b[2])) <= p.high_us for _, b in other):
                out.append((a[3], None) if n == 0 else (None, a[3]))
    return sorted(out, key=str)


def _random_rows(rng: random.Random, first: int) -> list[tuple]:
    rows = [(rng.choice([None, 1, 2, 3]), rng.choice([None, "a", "b"]), rng.randint(0, 20) * 1000, first + i, False)
            for i in range(rng.randint(0, 8))]
    if rng.random() < 0.2:
        rows.append((None, None, 99_000, -1, True))  # a rowtime bound: never a row
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_the_buckets_together_give_exactly_the_pairs_and_the_unmatched_leaving_rows(tmp_path, seed):
    for case in range(25):
        rng = random.Random(seed * 1000 + case)
        root = tmp_path / str(case)
        rows: list[dict[int, list[tuple]]] = [{}, {}]
        count = [rng.randint(1, 4), rng.randint(1, 4)]
        for n, alias in enumerate(("l", "r")):
            for step in range(count[n]):
                rows[n][step] = _random_rows(rng, 100 * (10 * n + step))
                _write(root / alias, step, rows[n][step])
        new = tuple(tuple(s for s in range(count[n]) if s == count[n] - 1 or rng.random() < 0.5) for n in range(2))
        old = tuple(tuple(s for s in range(count[n]) if s not in new[n]) for n in range(2))
        low, high = sorted([rng.randint(-5, 5) * 1000, rng.randint(-5, 5) * 1000])
        leave = tuple(tuple(sorted([rng.randint(-2, 22) * 1000, rng.randint(-2, 22) * 1000])) for _ in range(2))
        if rng.random() < 0.2:
            leave = ((ip._LOWEST, ip._LOWEST), leave[1])
        keys = ("k", "s") if rng.random() < 0.5 else ("k",)
        p = ip.Probe(_sides(root, keys), low, high, (rng.random() < 0.5, rng.random() < 0.5), old, new, leave, rng.randint(1, 3))
        assert _probe(p) == _expected(p, rows)


def test_the_cache_follows_steps_that_arrive_leave_and_are_rewritten_and_matches_a_cold_start(tmp_path, monkeypatch):
    rng = random.Random("cache")
    rows: list[dict[int, list[tuple]]] = [{}, {}]
    sides = _sides(tmp_path, ("k",))
    for step in range(12):
        for n, alias in enumerate(("l", "r")):
            rows[n][step] = [(rng.choice([1, 2, None]), "a", step * 1000 + rng.randint(0, 999), 1000 * n + 10 * step + i, False)
                             for i in range(rng.randint(0, 5))]
            _write(tmp_path / alias, step, rows[n][step])
        if step == 7:  # a step staged again after a crash (the run that follows is another epoch): other rows, the same name
            rows[0][6] = [(1, "a", 6500, 9999, False)]
            _write(tmp_path / "l", 6, rows[0][6])
        retained = tuple(range(max(0, step - 3), step))  # the steps still in range
        p = ip.Probe(sides, -2000, 2000, (True, True), (retained, retained), ((step,), (step,)),
                     ((step * 1000 - 3000, step * 1000 - 2000),) * 2, 2, "restarted" if step >= 7 else "first")
        warm = _probe(p)
        assert warm == _expected(p, rows)
        monkeypatch.setattr(ip, "_CACHE", type(ip._CACHE)())  # a worker that has not seen these steps
        assert _probe(p) == warm
    assert any(len(e) for e in ip._CACHE.values())


def test_the_cache_drops_the_least_recently_used_entries_beyond_its_size(tmp_path, monkeypatch):
    monkeypatch.setattr(ip, "_CACHE", type(ip._CACHE)())
    monkeypatch.setattr(ip, "CACHE_BYTES", 1)
    for alias in ("l", "r"):
        _write(tmp_path / alias, 0, [(1, "a", 1000 * i, i, False) for i in range(8)])
    p = ip.Probe(_sides(tmp_path, ("k",)), 0, 0, (False, False), ((), ()), ((0,), (0,)), ((0, 0), (0, 0)), 1)
    assert len(_probe(p)) == 8
    assert sum(len(e) for e in ip._CACHE.values()) == 8  # the left input's entry left for the right one's


@pytest.mark.parametrize("seed", range(3))
def test_an_index_of_many_small_runs_that_merge_and_shed_left_steps_gives_exactly_the_pairs(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(ip, "_CACHE", type(ip._CACHE)())
    monkeypatch.setattr(ip, "RUN_ROWS", (6, 40, 15)[seed])  # runs seal at a few rows: merges, dead steps and compaction all happen
    rng = random.Random(seed)
    rows: list[dict[int, list[tuple]]] = [{}, {}]
    sides, runs_seen, gone, epoch = _sides(tmp_path, ("k",)), 0, set(), 0
    for step in range(40):
        for n, alias in enumerate(("l", "r")):
            rows[n][step] = [(rng.choice([1, 2, 3, None]), "a", step * 1000 + rng.randint(0, 999), 1000 * (100 * n + step) + i,
                              False) for i in range(rng.randint(0, 6))]
            _write(tmp_path / alias, step, rows[n][step])
        if step > 2 and rng.random() < 0.2:
            gone.add(rng.randrange(max(0, step - 6), step))  # a retained step the sink no longer names: its rows are out
        elif gone and rng.random() < 0.2:
            gone.discard(max(gone))  # ... and named again
        if step > 2 and rng.random() < 0.15:  # a step staged again after a crash: the next run (epoch) reads it anew
            again, epoch = rng.randrange(max(0, step - 6), step), epoch + 1
            rows[0][again] = [(rng.choice([1, 2, 3]), "a", again * 1000 + rng.randint(0, 999), 1000 * (50 + again) + i, False)
                              for i in range(rng.randint(0, 6))]
            _write(tmp_path / "l", again, rows[0][again])
        retained = tuple(s for s in range(max(0, step - 6), step) if s not in gone)
        p = ip.Probe(sides, -2500, 1500, (True, seed != 1), (retained, retained), ((step,), (step,)),
                     ((step * 1000 - 4000, step * 1000 - 3000),) * 2, 1 + seed % 2, str(epoch))
        assert _probe(p) == _expected(p, rows)
        for n in range(2):
            held = [e for key, e in ip._CACHE.items() if key[0] == sides[n].steps_dir]
            assert sum(len(e) for e in held) == sum(len(rows[n][s]) for s in (*retained, step))
            runs_seen = max(runs_seen, *(len(e.runs) for e in held))
    assert runs_seen > 2
    warm = _probe(p)
    monkeypatch.setattr(ip, "_CACHE", type(ip._CACHE)())
    assert _probe(p) == warm


def test_the_index_holds_a_rowtime_once_and_gives_it_back_as_written(tmp_path, monkeypatch):
    # a rowtime that is not a key is the index's `time` only (not a payload column too: 8 bytes a
    # retained row); a rowtime key stays in the payload, compared as a value
    monkeypatch.setattr(ip, "_CACHE", type(ip._CACHE)())
    rng = random.Random("rowtime-once")
    rows: list[dict[int, list[tuple]]] = [{}, {}]
    for step in range(3):
        for n, alias in enumerate(("l", "r")):
            rows[n][step] = [(rng.choice([1, 2]), "a", rng.randint(0, 3) * 1000, 1000 * n + 10 * step + i, False) for i in range(6)]
            _write(tmp_path / alias, step, rows[n][step])
    written = {row[3]: row[2] for side in rows for step in side.values() for row in step}
    for keys in (("k",), ("k", "rowtime")):
        p = ip.Probe(_sides(tmp_path, keys), -3000, 3000, (True, True), ((0, 1), (0, 1)), ((2,), (2,)), ((0, 0), (0, 0)), 1)
        out = ip.probe(p, 0).to_pylist()
        assert len(out) > 5 and sorted(((r["l__v"], r["r__v"]) for r in out), key=str) == _expected(p, rows)
        for r in out:
            for alias in ("l", "r"):
                if r[f"{alias}__v"] is not None:
                    assert r[f"{alias}__rowtime"] == pa.scalar(written[r[f"{alias}__v"]], pa.int64()).cast(TS).as_py()
        payload = {name for entry in ip._CACHE.values() for run in entry.runs for name in run.payload.column_names}
        assert ("rowtime" in payload) == ("rowtime" in keys)
        ip._CACHE.clear()
