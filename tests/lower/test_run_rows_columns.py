"""An inner join of ROWS windows partitioned by the join keys runs on the column-wise engine
(operator.rows_columns) by default: the same rows, values and types as the row engine
(STREAMJOIN_OPERATOR_COLUMNAR=0), NULL keys and every plain column type included, and it resumes
from a checkpoint the row engine wrote."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import resume_with_other_settings, run_until_idle, write_jsonl
from streamjoin.lower.explain import explain_text
from streamjoin.runtime.pipeline import Pipeline
from streamjoin.settings import Settings
from test_run_asof_columns import canonical, ddl, restart_parts, rows

ROWS = Settings(operator_columnar=False)
COLUMNS = Settings(operator_columnar=True)

QUERY = ("SELECT STREAM ROWTIME, l.id AS lid, r.id AS rid, l.k AS k, r.n AS rn, r.x AS rx, r.ok AS rok, r.seen AS rseen, "
         "l.seen AS lseen FROM l OVER (PARTITION BY k, n ROWS {left}) JOIN r OVER (PARTITION BY n, k ROWS {right}) "
         "ON l.k = r.k AND l.n = r.n;")


def test_the_column_engine_writes_what_the_row_engine_writes_for_every_plain_type(spark, tmp_path):
    rng = random.Random("rows-columns-types")
    write_jsonl(tmp_path / "l" / "a.json", rows(rng, 80))
    write_jsonl(tmp_path / "r" / "a.json", rows(rng, 80))
    sql = ddl(tmp_path / "l", tmp_path / "r") + QUERY.format(left="CURRENT ROW", right="2 PRECEDING")
    by_rows, _ = run_until_idle(spark, sql, tmp_path / "rows", settings=ROWS)
    by_columns, status = run_until_idle(spark, sql, tmp_path / "columns", settings=COLUMNS)
    assert len(by_columns) > 20 and status["late_rows"] == 0
    assert canonical(by_columns) == canonical(by_rows)
    assert any(r["rseen"] is None for r in by_columns) and any(r["rx"] is not None for r in by_columns)


def test_explain_names_the_column_engine_only_where_it_runs(tmp_path):
    sql = ddl(tmp_path / "l", tmp_path / "r")
    keyed = explain_text(Pipeline.from_sql(sql + QUERY.format(left="CURRENT ROW", right="CURRENT ROW"), "q.sql", COLUMNS).script)
    finer = QUERY.replace("PARTITION BY n, k", "PARTITION BY n, k, id").format(left="CURRENT ROW", right="CURRENT ROW")
    outer = QUERY.replace(" JOIN r", " LEFT JOIN r").format(left="CURRENT ROW", right="CURRENT ROW")
    assert "rows: by column (each row pairs with the latest rows of its key" in keyed
    for other in (finer, outer):
        assert "rows: by column" not in explain_text(Pipeline.from_sql(sql + other, "q.sql", COLUMNS).script)


@pytest.mark.long
def test_a_query_the_row_engine_checkpointed_resumes_on_the_column_engine(spark, tmp_path):
    first, later = restart_parts(random.Random("rows-columns-restart"))
    sql = ddl(tmp_path / "l", tmp_path / "r", "1 SECOND") + QUERY.format(left="1 PRECEDING", right="CURRENT ROW")
    before, resumed, whole = resume_with_other_settings(spark, sql, tmp_path, first, later, ROWS, COLUMNS)
    assert before["rows_emitted"] > 0
    assert len(resumed) > len([r for r in resumed if r["lid"] < 100]) > 0  # rows joined on both sides of the restart
    assert canonical(resumed) == canonical(whole)
