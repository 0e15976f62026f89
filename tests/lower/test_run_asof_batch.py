"""A bounded run (`--until-idle`) of an ASOF join with `right.rowtime <= / < left.rowtime` runs on
Spark's batch engine (lower.batch.asof_batch): the rows the operator writes (its column engine, checked
against the reference in tests/lower/test_run_asof_columns.py and tests/operator), INNER and LEFT,
ties at a rowtime to the latest arrival, NULL keys, every plain type, in rowtime order; across a
stop and a resume too, and `explain` says which runs it."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import resume_with_other_settings, run_until_idle, write_jsonl
from streamjoin.lower.explain import explain_text
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.runtime.pipeline import Pipeline
from streamjoin.settings import Settings
from test_run_asof_columns import canonical, ddl, restart_parts, rows

OPERATOR = Settings(join_operator="custom")
QUERY = ("SELECT STREAM ROWTIME, l.id AS lid, r.id AS rid, l.k AS k, r.n AS rn, r.x AS rx, r.ok AS rok, r.seen AS rseen, "
         "l.seen AS lseen FROM l {join} r ON l.k = r.k AND l.n = r.n AND r.ROWTIME {op} l.ROWTIME;")


@pytest.mark.parametrize("join, op", [("ASOF LEFT JOIN", "<="), ("ASOF JOIN", "<"), ("ASOF LEFT JOIN", "<")])
def test_a_bounded_asof_join_on_the_batch_engine_writes_the_operators_rows_in_rowtime_order(spark, tmp_path, join, op):
    rng = random.Random(f"asof-batch {join} {op}")
    for name in ("a.json", "b.json"):
        write_jsonl(tmp_path / "l" / name, rows(rng, 60))
        write_jsonl(tmp_path / "r" / name, rows(rng, 60))
    sql = ddl(tmp_path / "l", tmp_path / "r") + QUERY.format(join=join, op=op)
    script = Pipeline.from_sql(sql, "q.sql").script
    assert "with --until-idle: streamjoin's batch ASOF join instead" in explain_text(script)
    assert "(lower.batch.asof_batch)" in explain_text(script, LoweringOptions(bounded=True))
    batch, status = run_until_idle(spark, sql, tmp_path / "batch")
    operator, _ = run_until_idle(spark, sql, tmp_path / "operator", settings=OPERATOR)
    assert canonical(batch) == canonical(operator)
    assert any(r["rid"] is not None for r in batch)
    assert (len(batch) == 120) == (join == "ASOF LEFT JOIN")
    assert [r["rowtime"] for r in batch] == sorted(r["rowtime"] for r in batch)
    assert status["late_rows"] == 0


def test_a_stopped_batch_asof_join_resumes_and_writes_each_left_row_once(spark, tmp_path):
    first, later = restart_parts(random.Random("asof-batch-restart"))
    sql = ddl(tmp_path / "l", tmp_path / "r", "1 SECOND") + QUERY.format(join="ASOF LEFT JOIN", op="<=")
    # the first part live, on the batch join as a bounded run would run it
    stopped, resumed, whole = resume_with_other_settings(spark, sql, tmp_path, first, later, Settings(join_operator="batch"), None,
                                                         whole_with=OPERATOR)
    assert 0 < stopped["rows_emitted"] < 40  # left rows decided before the stop, others still waiting
    assert len(resumed) == 80
    assert canonical(resumed) == canonical(whole)
