"""A GROUP BY without a time bucket over a stream (lower.running): a running aggregate written as
a changelog (`op` +I / -D). Folded, the changelog is at every micro-batch the SQL aggregate of
every row read so far, across a restart; a group whose row did not change writes nothing."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from runtime_helpers import ms, read_output, run_to_end, start, ts, write_jsonl
from streamjoin.errors import Unsupported
from streamjoin.lower.explain import explain_text
from streamjoin.plan import compile_sql
from streamjoin.runtime.pipeline import Pipeline

SQL = """
CREATE STREAM s (k VARCHAR, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{path}', format = 'json', rowtime = 'ts');
SELECT s.k, COUNT(*) AS n, COUNT(s.v) AS nv, SUM(s.v) AS total, MIN(s.v) AS lo, MAX(s.v) AS hi, AVG(s.v) AS mean,
  COUNT(DISTINCT s.v) AS kinds, COUNT(*) * 10 + 1 AS shaped
FROM s WHERE s.k <> 'z' GROUP BY s.k;
"""


def fold(changes: list[dict]) -> dict:
    """The changelog applied in order: each group's row as it stands (a -D must withdraw the row that stands)."""
    table = {}
    for row in changes:
        values = {c: v for c, v in row.items() if c != "op"}
        if row["op"] == "-D":
            assert table.pop(row["k"]) == values, ("a -D withdraws the row that stands", row)
        else:
            assert row["k"] not in table, ("a +I of a group that has a row, without its -D", row)
            table[row["k"]] = values
    return table


def aggregate(rows: list[dict]) -> dict:
    out = {}
    for k in sorted({r["k"] for r in rows if r["k"] != "z"}):
        mine = [r for r in rows if r["k"] == k]
        vs = [r["v"] for r in mine if r["v"] is not None]
        out[k] = {"k": k, "n": len(mine), "nv": len(vs), "total": sum(vs) if vs else None, "lo": min(vs, default=None),
                  "hi": max(vs, default=None), "mean": sum(vs) / len(vs) if vs else None, "kinds": len(set(vs)),
                  "shaped": len(mine) * 10 + 1}
    return out


def test_a_running_aggregate_folds_to_the_aggregate_of_every_row_read_at_each_micro_batch_and_after_a_restart(spark, tmp_path):
    rng = random.Random(20261128)
    rows = [{"k": rng.choice("abcz"), "v": rng.choice([None, 1, 2, 3, 5, 8]), "ms": n * 1000} for n in range(60)]
    folder = tmp_path / "in"
    folder.mkdir()
    sql = SQL.format(path=folder)

    def write(n: int, part: list[dict]) -> None:
        # and a row of 'z' (WHERE drops it) after them: the clock passes their instant, so they are released
        tick = {"k": "z", "v": None, "ms": part[-1]["ms"] + 500}
        write_jsonl(folder / f"{n:03d}.json", [{"k": r["k"], "v": r["v"], "ts": ts(r["ms"])} for r in [*part, tick]])

    runner = start(spark, sql, tmp_path / "run")
    try:
        for n in range(2):
            write(n, rows[n * 20:(n + 1) * 20])
            runner.process_available()
            runner.process_available()  # Spark's watermark moves after a micro-batch: the next one releases
            assert fold(read_output(tmp_path / "run" / "out")) == aggregate(rows[:(n + 1) * 20])
    finally:
        runner.stop("stopped")
    write(2, rows[40:])
    status = run_to_end(start(spark, sql, tmp_path / "run"))  # resumed: the groups' counts go on
    assert status["state"] == "finished", status
    changes = read_output(tmp_path / "run" / "out")
    assert fold(changes) == aggregate(rows)
    assert Counter(r["op"] for r in changes)["-D"] > 0, "groups were updated, not only inserted"


def test_a_running_aggregate_into_an_upsert_delta_table_holds_each_groups_row_as_it_stands(spark, tmp_path):
    # found by the crash matrix (issue 65): the changelog was appended, -D rows and all, into a table
    # declared type = 'upsert'; it is merged by the key, as an operator's changelog always was
    from deltalake import DeltaTable

    rng = random.Random("running-upsert")
    rows = [{"k": rng.choice("abcz"), "v": rng.choice([None, 1, 2, 3, 5, 8]), "ms": n * 1000} for n in range(40)]
    folder, table = tmp_path / "in", tmp_path / "table"
    sql = SQL.format(path=folder).replace("SELECT s.k,", f"""CREATE SINK g WITH (connector = 'files', path = '{table}',
  format = 'delta', type = 'upsert', primary_key = 'k');
INSERT INTO g SELECT s.k,""")
    write_jsonl(folder / "0.json", [{"k": r["k"], "v": r["v"], "ts": ts(r["ms"])} for r in rows[:20]])
    runner = start(spark, sql, tmp_path / "run")
    try:
        runner.process_available()
        runner.process_available()
    finally:
        runner.stop("stopped")
    write_jsonl(folder / "1.json", [{"k": r["k"], "v": r["v"], "ts": ts(r["ms"])} for r in rows[20:]])
    run_to_end(start(spark, sql, tmp_path / "run"))  # resumed: each group's row replaced, never repeated
    got = {r["k"]: r for r in DeltaTable(str(table)).to_pyarrow_table().to_pylist()}
    assert "op" not in next(iter(got.values())) and len(got) == len(aggregate(rows))
    assert got == {k: {c: v for c, v in row.items()} for k, row in aggregate(rows).items()}


def test_a_select_table_group_by_over_a_stream_is_a_running_aggregate_into_an_upsert_shaped_changelog(spark, tmp_path):
    folder = tmp_path / "in"
    write_jsonl(folder / "1.json", [{"k": "a", "v": 1, "ts": ts(0)}, {"k": "a", "v": 1, "ts": ts(1000)}, {"k": "b", "v": 1, "ts": ts(2000)}])
    sql = (f"CREATE STREAM s (k VARCHAR, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{folder}', format = 'json', "
           "rowtime = 'ts');\nSELECT TABLE s.k, MAX(s.v) AS hi FROM s GROUP BY s.k;")
    status = run_to_end(start(spark, sql, tmp_path / "run"))
    assert status["state"] == "finished", status
    changes = read_output(tmp_path / "run" / "out")
    # a's second row leaves its MAX as it was: no -D / +I for it
    assert sorted((r["op"], r["k"], r["hi"]) for r in changes) == [("+I", "a", 1), ("+I", "b", 1)]


@pytest.mark.parametrize(("window", "size", "slide"), [("TUMBLE(s, at, INTERVAL '10' SECOND)", 10, 10),
                                                     pytest.param("HOP(s, at, INTERVAL '5' SECOND, INTERVAL '15' SECOND)", 15, 5,
                                                                  marks=pytest.mark.long)])
def test_windows_on_a_column_that_is_not_the_rowtime_group_by_that_column_as_a_running_aggregate(spark, tmp_path, window, size, slide):
    # RisingWave's TUMBLE(src, ts, ...) over a source without a watermark: `at` is not the rowtime
    # (`ts`), so the windows never close; before 2026-11-28 they were the rowtime's buckets, silently
    rng = random.Random(window)
    rows = [{"k": rng.choice("ab"), "at": ts(rng.randint(0, 120_000)), "ts": ts(n * 100)} for n in range(80)]
    rows.append({"k": "a", "at": None, "ts": ts(8000)})  # in no window
    write_jsonl(tmp_path / "in" / "1.json", rows)
    sql = (f"CREATE STREAM s (k VARCHAR, at TIMESTAMP, ts TIMESTAMP) WITH (connector = 'files', path = '{tmp_path / 'in'}', "
           f"format = 'json', rowtime = 'ts');\nSELECT STREAM k, window_start, window_end, COUNT(*) AS n FROM {window} "
           "GROUP BY k, window_start, window_end;")
    status = run_to_end(start(spark, sql, tmp_path / "run"))
    assert status["state"] == "finished", status
    table = {}
    for row in read_output(tmp_path / "run" / "out"):  # folded by (k, window)
        group = (row["k"], row["window_start"], row["window_end"])
        table.pop(group) if row["op"] == "-D" else table.setdefault(group, row["n"])
    expected = Counter()
    for r in rows[:-1]:
        at = ms(r["at"])
        for start_ms in range(at - at % (slide * 1000) - (size - slide) * 1000, at + 1, slide * 1000):
            if start_ms + size * 1000 > at:
                expected[(r["k"], ts(start_ms), ts(start_ms + size * 1000))] += 1
    assert table == dict(expected)
    explained = explain_text(compile_sql(sql, "test.sql"))
    assert "windows at, not its rowtime (ts): they never close on its clock" in explained


def test_having_keeps_the_groups_that_pass_it_as_they_stand_entering_and_leaving(spark, tmp_path):
    """HAVING filters the changelog: a group enters when it starts to pass (COUNT(*) > 2), leaves
    with its -D when it stops (SUM(v) < 20 no longer), on aggregates the output does not hold."""
    rng = random.Random(68)
    rows = [{"k": rng.choice("abc"), "v": rng.choice([None, 1, 2, 3, 5, 8]), "ms": n * 1000} for n in range(45)]
    folder = tmp_path / "in"
    folder.mkdir()
    sql = (f"CREATE STREAM s (k VARCHAR, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{folder}', format = 'json', "
           "rowtime = 'ts');\nSELECT s.k, MAX(s.v) AS hi FROM s WHERE s.k <> 'z' GROUP BY s.k HAVING COUNT(*) > 2 AND COALESCE(SUM(s.v), 0) < 20;")

    def expected(seen):
        out = {}
        for k in {r["k"] for r in seen}:
            vs = [r["v"] for r in seen if r["k"] == k and r["v"] is not None]
            if sum(1 for r in seen if r["k"] == k) > 2 and sum(vs) < 20:
                out[k] = {"k": k, "hi": max(vs, default=None)}
        return out
    runner = start(spark, sql, tmp_path / "run")
    entered = left = False
    try:
        for n in range(3):
            part = rows[n * 15:(n + 1) * 15]
            tick = {"k": "z", "v": None, "ms": part[-1]["ms"] + 500}  # (the clock passes the part: it is released)
            write_jsonl(folder / f"{n:03d}.json", [{"k": r["k"], "v": r["v"], "ts": ts(r["ms"])} for r in [*part, tick]])
            runner.process_available()
            runner.process_available()
            table = fold(read_output(tmp_path / "run" / "out"))
            assert table == expected(rows[:(n + 1) * 15]), n
            entered, left = entered or bool(table), left or (n > 0 and bool(set(expected(rows[:n * 15])) - set(table)))
    finally:
        runner.stop("stopped")
    assert entered and left, "a group entered and a group left"


@pytest.mark.parametrize(("query", "message"), [
    ("SELECT s.k, SUM(DISTINCT s.v) AS n FROM s GROUP BY s.k", "a running aggregate keeps COUNT(DISTINCT x)"),
])
def test_what_a_running_aggregate_cannot_do_yet_is_refused_naming_it(tmp_path, query, message):
    sql = (f"CREATE STREAM s (k VARCHAR, v INT, v_at TIMESTAMP, ts TIMESTAMP) WITH (connector = 'files', path = '{tmp_path}', "
           f"format = 'json', rowtime = 'ts');\n{query};")
    with pytest.raises(Unsupported, match=re.escape(message)):
        Pipeline.from_sql(sql, "test.sql")
