"""EMIT EAGER of INNER interval joins runs on the batch interval join (lower.batch.batch_join,
lower.batch.batch_sink), two streams and chains: the rows of EMIT FINAL, each written as soon as the
join has found it. A live run writes its pairs before the clocks pass them (issue 42's latency:
FINAL's floor is the lateness); outer EAGER joins, whose NULL-extended rows leave at once, stay
on streamjoin's operator."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from runtime_helpers import ms, read_output, run_in_two_parts, run_to_end, run_until_idle, start, ts, write_jsonl
from streamjoin.lower.explain import explain_text
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.runtime.pipeline import Pipeline

STREAM = ("CREATE STREAM {name} (k BIGINT, v BIGINT) WITH (connector = 'files', format = 'json', path = '{path}', "
          "lateness = '{late}');\n")
TWO = ("SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv FROM l {how} r ON l.k = r.k AND r.ROWTIME BETWEEN "
       "l.ROWTIME - INTERVAL '5' SECOND AND l.ROWTIME + INTERVAL '5' SECOND EMIT {emit};\n")
THREE = ("SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, m.v AS mv, r.v AS rv FROM l JOIN m ON l.k = m.k AND m.ROWTIME "
         "BETWEEN l.ROWTIME - INTERVAL '5' SECOND AND l.ROWTIME + INTERVAL '5' SECOND JOIN r ON l.k = r.k AND r.ROWTIME "
         "BETWEEN l.ROWTIME - INTERVAL '5' SECOND AND l.ROWTIME + INTERVAL '5' SECOND EMIT {emit};\n")
BATCH = "operator: streamjoin's batch interval join"


def ddl(tmp_path, names: str, late: str = "2 SECONDS") -> str:
    return "".join(STREAM.format(name=n, path=tmp_path / n, late=late) for n in names)


def stream_rows(rng: random.Random, n: int, spread_ms: int = 60_000) -> list[dict]:
    return sorted(({"rowtime": ts(rng.randrange(spread_ms)), "k": rng.randrange(8), "v": rng.randrange(10**6)}
                   for _ in range(n)), key=lambda r: r["rowtime"])


def pairs(rows: list[dict], *columns: str) -> Counter:
    return Counter(tuple(r[c] for c in ("rowtime", "k", *columns)) for r in rows)


def write_inputs(tmp_path, rng: random.Random, names: str, files: int, n: int) -> dict[str, list[dict]]:
    written = {}
    for name in names:
        rows = stream_rows(rng, n)
        written[name] = rows
        for f in range(files):
            write_jsonl(tmp_path / name / f"{f}.json", rows[f * len(rows) // files:(f + 1) * len(rows) // files])
    return written


@pytest.mark.parametrize("files", [1, 3])
def test_an_eager_inner_interval_join_writes_the_final_rows_on_the_batch_engine(spark, tmp_path, files):
    written = write_inputs(tmp_path, random.Random(f"eager {files}"), "lr", files, 150)
    eager, final = (ddl(tmp_path, "lr") + TWO.format(how="JOIN", emit=e) for e in ("EAGER", "FINAL"))
    text = explain_text(Pipeline.from_sql(eager, "q.sql").script, LoweringOptions(bounded=True))
    assert BATCH in text and "EMIT EAGER of INNER joins: no wait for the clock" in text
    got, status = run_until_idle(spark, eager, tmp_path / "eager")
    want, _ = run_until_idle(spark, final, tmp_path / "final")
    expected = Counter((a["k"], a["v"], b["v"]) for a in written["l"] for b in written["r"]
                       if a["k"] == b["k"] and abs(ms(b["rowtime"]) - ms(a["rowtime"])) <= 5000)
    assert status["late_rows"] == 0 and len(got) > 100
    assert pairs(got, "lv", "rv") == pairs(want, "lv", "rv")
    assert Counter((r["k"], r["lv"], r["rv"]) for r in got) == expected


def test_a_live_eager_join_writes_its_pairs_before_the_clocks_pass_them(spark, tmp_path):
    """An hour's lateness: FINAL holds every pair (no clock passes them), EAGER writes them at once."""
    write_inputs(tmp_path, random.Random("eager live"), "lr", 2, 60)
    written = {}
    for emit in ("EAGER", "FINAL"):
        runner = start(spark, ddl(tmp_path, "lr", "1 HOUR") + TWO.format(how="JOIN", emit=emit), tmp_path / emit)
        try:
            runner.process_available()
            written[emit] = read_output(tmp_path / emit / "out")
        finally:
            runner.stop("stopped")
    assert written["FINAL"] == []
    assert len(written["EAGER"]) > 10
    # the run resumed and ended (end of input): FINAL writes the same rows then, EAGER none again
    for emit in ("EAGER", "FINAL"):
        run_to_end(start(spark, ddl(tmp_path, "lr", "1 HOUR") + TWO.format(how="JOIN", emit=emit), tmp_path / emit,
                         until_idle=True))
    assert pairs(read_output(tmp_path / "EAGER" / "out"), "lv", "rv") == pairs(written["EAGER"], "lv", "rv")
    assert pairs(read_output(tmp_path / "FINAL" / "out"), "lv", "rv") == pairs(written["EAGER"], "lv", "rv")


def test_a_stopped_live_eager_join_resumes_and_writes_each_pair_once(spark, tmp_path):
    """The rows written before the stop are not written again, and the pairs of a row before the
    stop with a row after it are written once (an hour's lateness: no clock passes any row)."""
    rng = random.Random("eager restart")
    first = {n: stream_rows(rng, 50, 30_000) for n in "lr"}
    later = {n: [{**r, "rowtime": ts(25_000 + ms(r["rowtime"]))} for r in stream_rows(rng, 50, 30_000)] for n in "lr"}
    for n in "lr":
        write_jsonl(tmp_path / n / "a.json", first[n])
    sql = ddl(tmp_path, "lr", "1 HOUR") + TWO.format(how="JOIN", emit="EAGER")
    stopped, _ = run_in_two_parts(spark, sql, tmp_path / "run",
                                  lambda: [write_jsonl(tmp_path / n / "b.json", later[n]) for n in "lr"])
    whole, _ = run_until_idle(spark, sql, tmp_path / "whole")
    resumed = read_output(tmp_path / "run" / "out")
    assert 0 < stopped["rows_emitted"] < len(resumed)
    assert pairs(resumed, "lv", "rv") == pairs(whole, "lv", "rv")
    crossing = Counter((a["v"], b["v"]) for a, b in [*((x, y) for x in first["l"] for y in later["r"]),
                                                      *((x, y) for x in later["l"] for y in first["r"])]
                       if a["k"] == b["k"] and abs(ms(a["rowtime"]) - ms(b["rowtime"])) <= 5000)
    assert crossing and all(Counter((r["lv"], r["rv"]) for r in resumed)[pair] == n for pair, n in crossing.items())


def test_an_eager_chain_of_inner_interval_joins_writes_the_final_rows_on_the_batch_engine(spark, tmp_path):
    write_inputs(tmp_path, random.Random("eager chain"), "lmr", 2, 90)
    eager, final = (ddl(tmp_path, "lmr") + THREE.format(emit=e) for e in ("EAGER", "FINAL"))
    script = Pipeline.from_sql(eager, "q.sql").script
    # a live one too: Spark's joins would wait for the clock, and the operator joins two inputs only
    assert BATCH in explain_text(script, LoweringOptions(bounded=True)) and BATCH in explain_text(script)
    got, _ = run_until_idle(spark, eager, tmp_path / "eager")
    want, _ = run_until_idle(spark, final, tmp_path / "final")
    assert len(got) > 50
    assert pairs(got, "lv", "mv", "rv") == pairs(want, "lv", "mv", "rv")


@pytest.mark.parametrize("how", ["LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
def test_an_outer_eager_join_stays_on_streamjoins_operator(tmp_path, how):
    script = Pipeline.from_sql(ddl(tmp_path, "lr") + TWO.format(how=how, emit="EAGER"), "q.sql").script
    assert BATCH not in explain_text(script, LoweringOptions(bounded=True))

