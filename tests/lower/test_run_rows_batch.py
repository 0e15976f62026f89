"""A bounded run (`--until-idle`) of an inner join of two ROWS CURRENT ROW windows partitioned by
the join keys runs on Spark's batch engine (lower.batch.rows_batch): the rows the operator writes (its
engines are checked against the reference in tests/lower/test_run_rows_columns.py and
tests/operator), ties at a rowtime in arrival order, NULL keys, every plain type, in rowtime
order; across a stop and a resume too, and `explain` says which runs it."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import resume_with_other_settings, run_until_idle, write_jsonl
from streamjoin.lower.explain import explain_text
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.runtime.pipeline import Pipeline
from streamjoin.settings import Settings
from test_run_asof_columns import canonical, ddl, restart_parts, rows
from test_run_rows_columns import QUERY

OPERATOR = Settings(join_operator="custom")
CURRENT = QUERY.format(left="CURRENT ROW", right="CURRENT ROW")


@pytest.mark.parametrize("files", [1, 3])
def test_a_bounded_rows_join_on_the_batch_engine_writes_the_operators_rows_in_rowtime_order(spark, tmp_path, files):
    rng = random.Random(f"rows-batch {files}")
    for n in range(files):
        write_jsonl(tmp_path / "l" / f"{n}.json", rows(rng, 90 // files))
        write_jsonl(tmp_path / "r" / f"{n}.json", rows(rng, 90 // files))
    sql = ddl(tmp_path / "l", tmp_path / "r") + CURRENT
    script = Pipeline.from_sql(sql, "q.sql").script
    assert "with --until-idle: streamjoin's batch ROWS join instead" in explain_text(script)
    assert "(lower.batch.rows_batch)" in explain_text(script, LoweringOptions(bounded=True))
    batch, status = run_until_idle(spark, sql, tmp_path / "batch")
    operator, _ = run_until_idle(spark, sql, tmp_path / "operator", settings=OPERATOR)
    assert len(batch) > 20 and status["late_rows"] == 0
    assert canonical(batch) == canonical(operator)
    assert [r["rowtime"] for r in batch] == sorted(r["rowtime"] for r in batch)


def test_only_current_row_windows_on_the_join_keys_of_an_inner_join_run_on_the_batch_engine(tmp_path):
    sql = ddl(tmp_path / "l", tmp_path / "r")
    bounded = LoweringOptions(bounded=True)
    others = [QUERY.format(left="CURRENT ROW", right="1 PRECEDING"),
              CURRENT.replace("PARTITION BY n, k", "PARTITION BY n, k, id"),
              CURRENT.replace(" JOIN r", " LEFT JOIN r"),
              CURRENT.replace("l.n = r.n;", "l.n = r.n AND l.id < r.id;")]
    for other in others:
        assert "(lower.batch.rows_batch)" not in explain_text(Pipeline.from_sql(sql + other, "q.sql").script, bounded), other


def test_a_stopped_batch_rows_join_resumes_and_writes_each_pair_once(spark, tmp_path):
    first, later = restart_parts(random.Random("rows-batch-restart"))
    sql = ddl(tmp_path / "l", tmp_path / "r", "1 SECOND") + CURRENT
    # the first part live, on the batch join as a bounded run would run it
    stopped, resumed, whole = resume_with_other_settings(spark, sql, tmp_path, first, later, Settings(join_operator="batch"), None,
                                                         whole_with=OPERATOR)
    assert stopped["rows_emitted"] > 0
    assert len(resumed) > stopped["rows_emitted"]
    assert canonical(resumed) == canonical(whole)
