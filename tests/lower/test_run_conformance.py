"""Cases other engines' own join tests found (issue 17): lateness decided per row, rowtimes at
and before the epoch, window joins written Flink's and RisingWave's way (window_end in ON,
TUMBLE/HOP offsets), COUNT(DISTINCT ...) in streaming aggregates."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
import reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_helpers import read_output, run_to_end, run_until_idle, start, write_jsonl
from streamjoin.io.sources.staging import late_rows

EPOCH = dt.datetime(1970, 1, 1)
BASE = dt.datetime(2024, 1, 1)


def at(ms: int, base: dt.datetime = EPOCH) -> str:
    t = base + dt.timedelta(milliseconds=ms)
    return f"{t.year:04d}-" + t.strftime("%m-%d %H:%M:%S.%f")[:-3]  # %Y does not pad years below 1000


def ms_of(text: str, base: dt.datetime = EPOCH) -> int:
    return (dt.datetime.fromisoformat(text) - base) // dt.timedelta(milliseconds=1)


# ---------------------------------------------------------------------------- lateness per row


def late_by_loop(rowtimes: list[int], bounds: list[bool], lateness: int, clock: int | None) -> list[bool]:
    """SEMANTICS §1-§2 one arrival at a time: late when below the clock as it stands before it."""
    out = []
    for t, is_bound in zip(rowtimes, bounds, strict=True):
        if is_bound:
            clock = t if clock is None else max(clock, t)
            out.append(False)
            continue
        out.append(clock is not None and t < clock)
        clock = t - lateness if clock is None else max(clock, t - lateness)
    return out


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(-10_000, 10_000), st.booleans()), max_size=40),
    lateness=st.integers(0, 3_000),
    clock=st.none() | st.integers(-10_000, 10_000),
)
def test_a_row_is_late_when_below_the_clock_left_by_every_earlier_row_and_bound(rows, lateness, clock):
    rowtimes, bounds = [t for t, _ in rows], [b for _, b in rows]
    got = late_rows(pa.array(rowtimes, pa.int64()), pa.array(bounds), lateness, clock).to_pylist()
    assert got == late_by_loop(rowtimes, bounds, lateness, clock)


LATE_SQL = """CREATE STREAM a (k INT, x INT) WITH (connector = 'files', format = 'json', path = '{a}', lateness = '2 SECONDS');
CREATE STREAM b (k INT, y INT) WITH (connector = 'files', format = 'json', path = '{b}', lateness = '2 SECONDS');
SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a OVER (RANGE INTERVAL '3' SECOND PRECEDING) AS a
  LEFT JOIN b OVER (RANGE INTERVAL '3' SECOND PRECEDING) AS b ON a.k = b.k;
"""


def late_input(rng: random.Random, n: int) -> list[dict]:
    """Rows mostly in rowtime order, some far behind: late by SEMANTICS §1 wherever they stand."""
    rows, t = [], 10_000
    for i in range(n):
        t += rng.randint(0, 700)
        back = rng.random() < 0.25
        rows.append({"rowtime": at(t - rng.randint(1_000, 5_000) if back else t), "k": rng.randint(0, 3), "x": i, "y": i})
    return rows


def test_the_same_rows_give_the_same_output_and_late_rows_whole_or_in_many_small_steps(spark, tmp_path):
    rng = random.Random(17)
    a_rows, b_rows = late_input(rng, 60), late_input(rng, 60)
    whole = tmp_path / "whole"
    write_jsonl(whole / "a" / "1.json", a_rows)
    write_jsonl(whole / "b" / "1.json", b_rows)
    rows_whole, status_whole = run_until_idle(spark, LATE_SQL.format(a=whole / "a", b=whole / "b"), whole / "run")

    steps = tmp_path / "steps"
    (steps / "a").mkdir(parents=True)
    (steps / "b").mkdir(parents=True)
    runner = start(spark, LATE_SQL.format(a=steps / "a", b=steps / "b"), steps / "run")
    try:
        for i in range(0, 60, 7):  # 9 steps of 7 rows per input
            write_jsonl(steps / "a" / f"{i:03d}.json", a_rows[i:i + 7])
            write_jsonl(steps / "b" / f"{i:03d}.json", b_rows[i:i + 7])
            runner.process_available()
    except Exception as error:
        runner.fail(error)
        raise
    status_steps = run_to_end(runner)
    rows_steps = read_output(steps / "run" / "out")

    expected_late = sum(late_by_loop([ms_of(r["rowtime"]) for r in rows], [False] * 60, 2_000, None).count(True)
                        for rows in (a_rows, b_rows))
    assert expected_late > 5  # the data does have late rows, in the middle of files
    assert status_whole["late_rows"] == status_steps["late_rows"] == expected_late
    assert Counter(map(repr, rows_whole)) == Counter(map(repr, rows_steps))
    assert rows_whole  # and the join did produce rows


# ---------------------------------------------------------------------------- the epoch and before

EPOCH_BASES = {  # where the generated rowtimes lie
    "around the epoch": EPOCH - dt.timedelta(seconds=4),
    "long before the epoch": dt.datetime(1066, 10, 14),
    "the first year": dt.datetime(1, 1, 1, 0, 0, 1),
    "far ahead": dt.datetime(7999, 12, 31, 23, 0),
}
CASES = 8


def test_rowtimes_at_before_and_long_after_the_epoch_join_as_the_reference_says(spark, tmp_path):
    """Property: generated two-stream RANGE joins (every join type) over rowtimes around the epoch,
    before it, and at both ends of the supported range give the reference's rows. (Spark's watermark
    starts at the epoch and drops what is at or below it; the engine must not.)"""
    rng = random.Random(1970)
    ddl = ("CREATE STREAM l (id INT, c INT, k INT) WITH (connector = 'files', format = 'json', path = '{l}');\n"
           "CREATE STREAM r (id INT, c INT, k INT) WITH (connector = 'files', format = 'json', path = '{r}');\n")
    for name, base in EPOCH_BASES.items():
        for join_type in ("INNER", "LEFT", "RIGHT", "FULL"):
            work = tmp_path / f"{name.replace(' ', '-')}-{join_type}"
            streams = []
            for side in ("l", "r"):
                rows = [{"id": i, "c": c, "k": rng.randint(0, 1), "rowtime": t}
                        for c in range(CASES) for i, t in enumerate(sorted(rng.randint(0, 8) * 500 for _ in range(rng.randint(0, 4))))]
                rows.sort(key=lambda r: r["rowtime"])  # in rowtime order: nothing is late
                write_jsonl(work / side / "1.json", [{**r, "rowtime": at(r["rowtime"], base)} for r in rows])
                streams.append(rows)
            sql = ddl.format(l=work / "l", r=work / "r") + (
                "SELECT STREAM ROWTIME, COALESCE(s0.c, s1.c) AS c, s0.id AS id0, s1.id AS id1 "
                f"FROM l OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS s0 {join_type} JOIN r OVER (RANGE INTERVAL '2' SECOND PRECEDING) AS s1 "
                "ON s0.c = s1.c AND s0.k = s1.k;")
            rows, status = run_until_idle(spark, sql, work / "run")
            assert status["late_rows"] == 0
            got = Counter((r["c"], ms_of(r["rowtime"], base), r["id0"], r["id1"]) for r in rows)
            expected = Counter()
            for c in range(CASES):
                left = ref.Stream("s0", [r for r in streams[0] if r["c"] == c], 1000)
                right = ref.Stream("s1", [r for r in streams[1] if r["c"] == c], 2000)
                step = ref.JoinStep(right, join_type, lambda combo: combo["s0"] is not None and combo["s0"]["k"] == combo["s1"]["k"])
                for combo, (begins, _) in ref.join_chain(left, [step]):
                    expected[(c, begins, *(combo[a]["id"] if combo[a] else None for a in ("s0", "s1")))] += 1
            assert got == expected, (name, join_type)


def test_two_rows_at_the_epoch_join_on_the_custom_operator_and_in_an_aggregate(spark, tmp_path):
    for side in ("l", "r"):
        write_jsonl(tmp_path / side / "1.json", [{"id": 1, "ts": "1969-12-31 23:59:59.999"}, {"id": 2, "ts": "1970-01-01 00:00:00.000"}])
    ddl = (f"CREATE STREAM l (id INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'l'}', rowtime = 'ts');\n"
           f"CREATE STREAM r (id INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'r'}', rowtime = 'ts');\n")
    rows, _ = run_until_idle(spark, ddl + "SELECT STREAM l.id, l.ts, r.ts AS rts FROM l OVER (ROWS 1 PRECEDING) JOIN r OVER (ROWS 1 PRECEDING) ON l.id = r.id;",
                             tmp_path / "rows")
    assert sorted((r["id"], r["ts"], r["rts"]) for r in rows) == [
        (1, "1969-12-31 23:59:59.999", "1969-12-31 23:59:59.999"), (2, "1970-01-01 00:00:00.000", "1970-01-01 00:00:00.000")]
    rows, _ = run_until_idle(spark, ddl + "SELECT STREAM FLOOR(l.ts TO SECOND) AS s, COUNT(*) AS n FROM l GROUP BY FLOOR(l.ts TO SECOND);",
                             tmp_path / "agg")
    assert rows == [{"s": "1969-12-31 23:59:59.000", "n": 1}, {"s": "1970-01-01 00:00:00.000", "n": 1}]


def test_a_rowtime_outside_the_supported_range_is_set_aside_with_a_clear_reason(spark, tmp_path):
    write_jsonl(tmp_path / "l" / "1.json", [{"id": 1, "ts": "8000-01-01 00:00:00.000"}, {"id": 2, "ts": "2024-01-01 00:00:00.000"}])
    sql = (f"CREATE STREAM l (id INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'l'}', rowtime = 'ts');\n"
           "SELECT STREAM l.id FROM l;")
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert rows == [{"id": 2}] and status["rejected_rows"] == 1
    (letter,) = Path(status["inputs"]["l"]["rejected_rows_output"]).glob("rejected-*.jsonl")
    assert json.loads(letter.read_text())["reason"] == "rowtime ts outside the supported range 0001-01-01 to 7999-12-31"


# ---------------------------------------------------------------------------- window functions


def test_a_window_join_written_with_window_start_and_window_end_in_on_runs(spark, tmp_path):
    """Flink's and RisingWave's own tests write window joins this way."""
    write_jsonl(tmp_path / "l" / "1.json", [{"id": 1, "ts": "2024-01-01 00:00:01.000"}, {"id": 2, "ts": "2024-01-01 00:00:06.000"}])
    write_jsonl(tmp_path / "r" / "1.json", [{"id": 1, "ts": "2024-01-01 00:00:04.000"}, {"id": 2, "ts": "2024-01-01 00:00:11.000"}])
    sql = (f"CREATE STREAM l (id INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'l'}', rowtime = 'ts');\n"
           f"CREATE STREAM r (id INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'r'}', rowtime = 'ts');\n"
           "SELECT STREAM L.id, L.window_start, L.window_end FROM TUMBLE(l, ts, INTERVAL '5' SECOND) L "
           "JOIN TUMBLE(r, ts, INTERVAL '5' SECOND) R ON L.id = R.id AND L.window_start = R.window_start AND L.window_end = R.window_end;")
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")
    assert rows == [{"id": 1, "window_start": "2024-01-01 00:00:00.000", "window_end": "2024-01-01 00:00:05.000"}]


GROUP_SHAPES = {  # function call, size, slide, offset (ms)
    "tumble-offset": ("TUMBLE(e, ts, INTERVAL '5' SECOND, INTERVAL '2' SECOND)", 5000, 5000, 2000),
    "tumble-negative-offset": ("TUMBLE(e, ts, INTERVAL '5' SECOND, INTERVAL '-7' SECOND)", 5000, 5000, -7000),
    "hop-offset": ("HOP(e, ts, INTERVAL '2' SECOND, INTERVAL '6' SECOND, INTERVAL '1' SECOND)", 6000, 2000, 1000),
}


def test_tumble_and_hop_with_offsets_group_rows_into_the_windows_the_reference_gives(spark, tmp_path):
    rng = random.Random(42)
    events = sorted(({"ts": rng.randint(0, 40_000), "u": rng.randint(0, 5)} for _ in range(80)), key=lambda e: e["ts"])
    base = BASE
    write_jsonl(tmp_path / "e" / "1.json", [{"ts": at(e["ts"], base), "u": e["u"]} for e in events])
    for name, (call, size, slide, offset) in GROUP_SHAPES.items():
        sql = (f"CREATE STREAM e (u INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'e'}', rowtime = 'ts');\n"
               f"SELECT STREAM window_start, window_end, COUNT(*) AS n, COUNT(DISTINCT u) AS users FROM {call} "
               "GROUP BY window_start, window_end;")
        rows, _ = run_until_idle(spark, sql, tmp_path / name)
        expected: dict[int, list[int]] = {}
        for e in events:
            for ws in ref.window_starts(e["ts"], size, slide, offset):
                expected.setdefault(ws, []).append(e["u"])
        assert [(ms_of(r["window_start"], base), ms_of(r["window_end"], base), r["n"], r["users"]) for r in rows] == [
            (ws, ws + size, len(us), len(set(us))) for ws, us in sorted(expected.items())], name


# ---------------------------------------------------------------------------- joined windowed aggregates

AGG_VIEWS = """CREATE STREAM a (k INT, v INT, u INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{a}', rowtime = 'ts');
CREATE STREAM b (k INT, v INT, u INT, ts TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{b}', rowtime = 'ts');
CREATE VIEW aw AS SELECT STREAM window_start, window_end, k, COUNT(*) AS n, SUM(v) AS total
  FROM TUMBLE(a, ts, INTERVAL '5' SECOND) GROUP BY window_start, window_end, k;
CREATE VIEW bw AS SELECT STREAM FLOOR(b.ts TO SECOND) AS s, k, COUNT(DISTINCT u) AS users, COUNT(*) AS n
  FROM b GROUP BY FLOOR(b.ts TO SECOND), k;
"""


def windowed(events: list[dict], size_ms: int) -> dict[tuple[int, int], list[dict]]:
    """(bucket start, key) -> the events of that bucket and key."""
    out: dict[tuple[int, int], list[dict]] = {}
    for e in events:
        out.setdefault((e["t"] // size_ms * size_ms, e["k"]), []).append(e)
    return out


@pytest.mark.parametrize("join", ["FULL JOIN", pytest.param("JOIN", marks=pytest.mark.long)])  # (FULL's rows hold INNER's)
def test_two_windowed_aggregates_join_per_window_and_key_inner_and_full_as_the_reference_says(spark, tmp_path, join):
    """The everyday "join two per-window summaries" query: each view emits a bucket's row when the
    bucket closes, rowtime = the bucket start; the join pairs rows of equal bucket and key. The
    5-second TUMBLE buckets of `a` meet the 1-second FLOOR buckets of `b` where they start alike."""
    rng = random.Random(20241124)
    streams = []
    for side in ("a", "b"):
        t, events = 0, []
        for _ in range(150):
            t += rng.randint(0, 400)
            events.append({"t": t, "k": rng.randint(0, 2), "v": rng.randint(1, 9), "u": rng.randint(0, 3)})
        write_jsonl(tmp_path / side / "1.json", [{"ts": at(e["t"], BASE), "k": e["k"], "v": e["v"], "u": e["u"]} for e in events])
        streams.append(events)
    left = {key: (len(es), sum(e["v"] for e in es)) for key, es in windowed(streams[0], 5000).items()}
    right = {key: (len({e["u"] for e in es}), len(es)) for key, es in windowed(streams[1], 1000).items()}
    expected_keys = left.keys() | right.keys() if join == "FULL JOIN" else left.keys() & right.keys()
    for operator in ("auto", "custom"):
        sql = AGG_VIEWS.format(a=tmp_path / "a", b=tmp_path / "b") + (
            "SELECT STREAM ROWTIME, COALESCE(aw.window_start, bw.s) AS ws, COALESCE(aw.k, bw.k) AS k, aw.n AS an, "
            f"aw.total, bw.users, bw.n AS bn FROM aw {join} bw ON aw.k = bw.k AND aw.window_start = bw.s"
            + (" EMIT CHANGES;" if operator == "custom" else ";"))
        work = tmp_path / f"{join.split()[0]}-{operator}"
        rows, status = run_until_idle(spark, sql, work)
        assert status["late_rows"] == 0
        folded = Counter()  # EMIT CHANGES: the changelog folds to the FINAL rows
        for r in rows:
            folded[(ms_of(r["rowtime"], BASE), ms_of(r["ws"], BASE), r["k"], r["an"], r["total"], r["users"], r["bn"])] += (
                -1 if r.get("op") == "-D" else 1)
        got = sorted(folded.elements())
        expected = sorted((ws, ws, k, *(left.get((ws, k)) or (None, None)), *(right.get((ws, k)) or (None, None)))
                          for ws, k in expected_keys)
        assert got == expected, (join, operator)
        if operator == "auto":
            assert [r["rowtime"] for r in rows] == sorted(r["rowtime"] for r in rows)  # EMIT FINAL order
