"""A semi or anti join after a join of streams bounded in time (issue 67): `a JOIN b` in an
interval, then `EXISTS` / `NOT EXISTS` over a third stream bounded against a's rowtime. Written in
one query, `run` refuses it (streamjoin's operator runs the semi / anti join as the query's only
join of bounded streams) saying to join a and b in a view; written so, each joined pair is kept
once if (not) some row of the third stream matches it, as SQL says of the rows (the pair's
rowtime is the later of a's and b's: a's here)."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import run_until_idle, ts, write_jsonl
from streamjoin.errors import Unsupported
from streamjoin.runtime.pipeline import Pipeline

MINUTE = 60_000


def _rows(rng, n: int) -> list[dict]:
    return [{"id": i, "k": rng.randint(0, 3), "rowtime": rng.randint(0, 20) * 15_000} for i in range(n)]


@pytest.mark.parametrize("negated", [False, pytest.param(True, marks=pytest.mark.long)])
def test_a_semi_or_anti_join_after_an_interval_join_keeps_each_pair_as_sql_does(spark, tmp_path, negated):
    rng = random.Random(67 + negated)
    streams = {name: _rows(rng, 30) for name in ("a", "b", "c")}
    for name, rows in streams.items():
        write_jsonl(tmp_path / name / "r.json", [{**r, "rowtime": ts(r["rowtime"])} for r in sorted(rows, key=lambda r: r["rowtime"])])
    declared = "".join(f"CREATE STREAM {n} (id INT, k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / n}');\n"
                       for n in streams)
    pairs = ("SELECT STREAM a.id AS aid, b.id AS bid, a.k AS k FROM a JOIN b ON a.k = b.k "
             "AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' MINUTE AND a.ROWTIME")
    exists = (f"{'NOT ' if negated else ''}EXISTS (SELECT * FROM c WHERE c.k = {{p}}.k "
              "AND c.ROWTIME BETWEEN {p}.ROWTIME - INTERVAL '1' MINUTE AND {p}.ROWTIME)")
    one_query = declared + pairs.replace(", a.k AS k", "") + " WHERE " + exists.format(p="a") + ";"
    with pytest.raises(Unsupported, match="join the other streams in a view and write the subquery over it"):
        Pipeline.from_sql(one_query, "chain.sql")
    sql = declared + f"CREATE VIEW pairs AS {pairs};\nSELECT STREAM aid, bid FROM pairs AS p WHERE {exists.format(p='p')};"
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["state"] == "finished", status

    def matched(x, others):
        return any(o["k"] == x["k"] and x["rowtime"] - MINUTE <= o["rowtime"] <= x["rowtime"] for o in others)
    expected = sorted((a["id"], b["id"]) for a in streams["a"] for b in streams["b"]
                      if a["k"] == b["k"] and a["rowtime"] - MINUTE <= b["rowtime"] <= a["rowtime"]
                      and matched(a, streams["c"]) != negated)
    assert sorted((r["aid"], r["bid"]) for r in rows) == expected
