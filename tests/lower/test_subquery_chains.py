"""A semi or anti join after a join of streams bounded in time (issue 67): `a JOIN b` in an
interval, then `EXISTS` / `NOT EXISTS` / `IN` over a third stream bounded against a's (or b's)
rowtime. streamjoin's operator runs a semi / anti join as its query's only join, so the outer
joins become a view of their own (plan.analyzer.semi_chains), as Flink runs the two joins one
after the other: each joined pair is kept once if (not) some row of the third stream matches it,
as SQL says of the rows, its rowtime the later of a's and b's. Written with the view by hand it
gives the same rows."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import run_until_idle, ts, write_jsonl

MINUTE = 60_000


def _rows(rng, n: int) -> list[dict]:
    return [{"id": i, "k": rng.randint(0, 3), "rowtime": rng.randint(0, 20) * 15_000} for i in range(n)]


def _declared(tmp_path, streams) -> str:
    for name, rows in streams.items():
        write_jsonl(tmp_path / name / "r.json", [{**r, "rowtime": ts(r["rowtime"])} for r in sorted(rows, key=lambda r: r["rowtime"])])
    return "".join(f"CREATE STREAM {n} (id INT, k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / n}');\n"
                   for n in streams)


PAIRS = ("FROM a JOIN b ON a.k = b.k AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' MINUTE "
         "AND a.ROWTIME + INTERVAL '30' SECOND")


def _paired(streams):
    return [(a, b) for a in streams["a"] for b in streams["b"]
            if a["k"] == b["k"] and a["rowtime"] - MINUTE <= b["rowtime"] <= a["rowtime"] + MINUTE // 2]


@pytest.mark.parametrize(("form", "anchor", "emit"), [
    ("EXISTS", "a", ""),
    pytest.param("NOT EXISTS", "a", "", marks=pytest.mark.long),
    pytest.param("NOT EXISTS", "b", " EMIT EAGER", marks=pytest.mark.long),
    pytest.param("IN", "b", "", marks=pytest.mark.long),
    pytest.param("EXISTS", "b", " EMIT CHANGES", marks=pytest.mark.long),
])
def test_a_semi_or_anti_join_after_an_interval_join_keeps_each_pair_as_sql_does(spark, tmp_path, form, anchor, emit):
    """(EMIT EAGER / CHANGES: the semi / anti join's own mode over the joined rows, released final;
    a bounded run's rows are SQL's: an anti row is never withdrawn once the input has ended.)"""
    rng = random.Random(67 + len(form) + ord(anchor))
    streams = {name: _rows(rng, 30) for name in ("a", "b", "c")}
    declared = _declared(tmp_path, streams)
    bound = f"c.ROWTIME BETWEEN {anchor}.ROWTIME - INTERVAL '1' MINUTE AND {anchor}.ROWTIME"
    if form == "IN":
        test = f"{anchor}.k IN (SELECT c.k FROM c WHERE {bound})"
    else:
        test = f"{form} (SELECT * FROM c WHERE c.k = {anchor}.k AND {bound})"
    sql = declared + f"SELECT STREAM a.id AS aid, b.id AS bid, ROWTIME AS t {PAIRS} WHERE {test}{emit};"
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["state"] == "finished", status
    if emit == " EMIT CHANGES":
        assert all(r.get("op", "+I") == "+I" for r in rows), "a semi row is never withdrawn: its match stays"
        rows = [{k: v for k, v in r.items() if k != "op"} for r in rows]

    def matched(pair):
        x = pair[0] if anchor == "a" else pair[1]
        return any(o["k"] == x["k"] and x["rowtime"] - MINUTE <= o["rowtime"] <= x["rowtime"] for o in streams["c"])
    expected = sorted((a["id"], b["id"], ts(max(a["rowtime"], b["rowtime"])))
                      for a, b in _paired(streams) if matched((a, b)) != form.startswith("NOT"))
    assert sorted((r["aid"], r["bid"], r["t"]) for r in rows) == expected, sql


def test_the_joins_before_a_semi_join_are_a_view_and_explain_shows_its_time_bound(tmp_path):
    """The semi join's time bound against the joined rows' rowtime is the subquery's own, widened
    by how much earlier a's rowtime can be (b up to 30 s after a): 90 s, the exact one a residual."""
    from streamjoin.lower.explain import explain_text
    from streamjoin.plan import compile_sql

    declared = _declared(tmp_path, {n: [] for n in "abc"})
    sql = declared + (f"SELECT STREAM a.id, b.id AS bid {PAIRS} WHERE EXISTS (SELECT * FROM c WHERE c.k = a.k "
                      "AND c.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' MINUTE AND a.ROWTIME);")
    text = explain_text(compile_sql(sql, "chain.sql"))
    assert "view joined: stream" in text
    assert "joined.ROWTIME - 90 SECOND <= exists_1.ROWTIME <= joined.ROWTIME" in text
    assert "residual: exists_1.rowtime BETWEEN joined.a__rowtime - INTERVAL '1 MINUTE' AND joined.a__rowtime" in text
    assert "output: id=joined.a__id, bid=joined.b__id" in text


@pytest.mark.parametrize("dialect", ["sqlstream", "kda"])
def test_upper_case_names_of_s_server_and_kda_programs_are_the_views_columns_as_written(tmp_path, dialect):
    """(s-Server and KDA fold unquoted names to upper case: the view's columns and the rewritten
    references are quoted as the inputs name them.)"""
    from streamjoin.lower.explain import explain_text
    from streamjoin.plan import compile_sql

    declared = "".join(f"CREATE STREAM {n} (ID INT, K INT) WITH (connector = 'files', format = 'json', path = '{tmp_path}');\n"
                       for n in "ABC")
    sql = declared + ("SELECT STREAM A.ID AS AID, B.ID FROM A JOIN B ON A.K = B.K AND B.ROWTIME BETWEEN A.ROWTIME - "
                      "INTERVAL '1' MINUTE AND A.ROWTIME WHERE NOT EXISTS (SELECT * FROM C WHERE C.K = A.K AND "
                      "C.ROWTIME BETWEEN A.ROWTIME - INTERVAL '1' MINUTE AND A.ROWTIME);")
    text = explain_text(compile_sql(sql, "chain.sql", dialect=dialect))
    assert "view joined: stream" in text and 'output: AID=joined."A__ID", ID=joined."B__ID"' in text
