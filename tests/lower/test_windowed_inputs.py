"""A TUMBLE / HOP input read as rows (issue 68: RisingWave's docs and demos): its rows with their
windows' columns (`window_start`, `window_end`; a HOP row once per window it is in), selected as
they are or joined with a table (enrichment), grouped after the join too. Each run's rows are the
SQL answer computed here."""

from __future__ import annotations

from collections import Counter

import pytest
from runtime_helpers import read_output, ts, write_jsonl
from streamjoin.runtime.pipeline import Pipeline

MINUTE = 60_000
ROWS = [{"k": k, "v": v, "ms": ms} for k, v, ms in [(1, 10, 5_000), (2, 20, 30_000), (1, 30, 65_000), (3, 40, 70_000),
                                                      (1, 50, 125_000), (2, 60, 170_000)]]
SOURCE = ("CREATE SOURCE s (k INT, v INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) "
          "WITH (connector = 'files', path = '{path}') FORMAT PLAIN ENCODE JSON;\n"
          "CREATE TABLE t (k INT PRIMARY KEY, name VARCHAR);\nINSERT INTO t VALUES (1, 'one'), (2, 'two');\n")


def _run(spark, tmp_path, query: str) -> list[dict]:
    write_jsonl(tmp_path / "s" / "a.json", [{"k": r["k"], "v": r["v"], "ts": ts(r["ms"])} for r in ROWS])
    sql = SOURCE.format(path=tmp_path / "s") + f"CREATE MATERIALIZED VIEW mv AS {query};\n"
    pipeline = Pipeline.from_sql(sql, "rw.sql", dialect="risingwave")
    statuses = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert all(s["state"] == "finished" for s in statuses.values()), statuses
    return read_output(tmp_path / "out")


def _window(ms: int, size: int = MINUTE) -> tuple[str, str]:
    start = ms - ms % size
    return ts(start), ts(start + size)


@pytest.mark.parametrize("function", [pytest.param("TUMBLE", marks=pytest.mark.long), pytest.param("HOP", marks=pytest.mark.long)])
def test_a_tumble_or_hop_read_as_rows_gives_each_row_with_its_windows(spark, tmp_path, function):
    call = "TUMBLE(s, ts, INTERVAL '1' MINUTE)" if function == "TUMBLE" else "HOP(s, ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)"
    rows = _run(spark, tmp_path, f"SELECT k, v, window_start, window_end FROM {call}")
    got = Counter((r["k"], r["v"], r["window_start"], r["window_end"]) for r in rows if r.get("op", "+I") == "+I")
    if function == "TUMBLE":
        want = Counter((r["k"], r["v"], *_window(r["ms"])) for r in ROWS)
    else:  # each row in the two 2-minute windows that start on the minutes before it
        want = Counter((r["k"], r["v"], ts(s), ts(s + 2 * MINUTE)) for r in ROWS
                       for s in (r["ms"] - r["ms"] % MINUTE - MINUTE, r["ms"] - r["ms"] % MINUTE))
    assert got == want


def test_a_tumble_joined_with_a_table_enriches_each_row_and_groups_after_the_join(spark, tmp_path):
    names = {1: "one", 2: "two"}
    rows = _run(spark, tmp_path / "rows", "SELECT x.k, x.v, x.window_start, t.name FROM TUMBLE(s, ts, INTERVAL '1' MINUTE) "
                                          "AS x JOIN t ON x.k = t.k")
    assert Counter((r["k"], r["v"], r["window_start"], r["name"]) for r in rows) == Counter(
        (r["k"], r["v"], _window(r["ms"])[0], names[r["k"]]) for r in ROWS if r["k"] in names)
    groups = _run(spark, tmp_path / "groups", "SELECT t.name, x.window_start, COUNT(*) AS n, SUM(x.v) AS total "
                                              "FROM TUMBLE(s, ts, INTERVAL '1' MINUTE) AS x JOIN t ON x.k = t.k "
                                              "GROUP BY t.name, x.window_start")
    want: dict = {}
    for r in ROWS:
        if r["k"] in names:
            key = (names[r["k"]], _window(r["ms"])[0])
            n, total = want.get(key, (0, 0))
            want[key] = (n + 1, total + r["v"])
    final = {(r["name"], r["window_start"]): (r["n"], r["total"]) for r in groups if r.get("op", "+I") == "+I"}
    assert final == want
