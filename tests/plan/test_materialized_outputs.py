"""A file of RisingWave materialized views writes every one that nothing reads (plan.analyzer
.outputs): RisingWave keeps each up to date, and before 2026-11-29 only the last was written."""

from __future__ import annotations

import pytest
from sqlglot import exp
from streamjoin.errors import SqlError
from streamjoin.plan import compile_sql

SOURCES = """
CREATE SOURCE a (k INT, v INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH (connector = 'files', path = '/in/a') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE b (k INT, w INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH (connector = 'files', path = '/in/b') FORMAT PLAIN ENCODE JSON;
CREATE TABLE t (k INT PRIMARY KEY, name VARCHAR);
INSERT INTO t VALUES (1, 'x');
"""


def outputs(sql: str) -> list[str]:
    return [q.name for q in compile_sql(SOURCES + sql, "rw.sql", dialect="risingwave").runs]


def test_every_materialized_view_nothing_reads_is_an_output_in_the_files_order_led_by_its_stream_key():
    script = compile_sql(SOURCES + """
CREATE MATERIALIZED VIEW joined AS SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '1' MINUTE AND b.ts;
CREATE MATERIALIZED VIEW counted AS SELECT k, COUNT(*) AS n FROM a GROUP BY k;
CREATE MATERIALIZED VIEW named AS SELECT t.k, t.name FROM t;
""", "rw.sql", dialect="risingwave")
    assert [q.name for q in script.runs] == ["joined", "counted", "named"]
    for query in script.runs:
        first = query.output[0]
        assert first.name == "stream" and first.expression == exp.Literal.string(query.name)


def test_a_view_another_view_reads_is_not_an_output_nor_is_one_read_through_tumble():
    assert outputs("""
CREATE MATERIALIZED VIEW base AS SELECT k, v, ts FROM a;
CREATE MATERIALIZED VIEW windows AS SELECT k, window_start, COUNT(*) AS n FROM TUMBLE(base, ts, INTERVAL '1' MINUTE) GROUP BY k, window_start;
CREATE MATERIALIZED VIEW other AS SELECT k, w FROM b;
""") == ["windows", "other"]


def test_plain_views_are_not_written_and_one_materialized_view_is_the_files_last_view():
    assert outputs("""
CREATE VIEW plain AS SELECT k, w FROM b;
CREATE MATERIALIZED VIEW lone AS SELECT k, v FROM a;
""") == ["lone"]
    assert [c.name for c in compile_sql(SOURCES + "CREATE MATERIALIZED VIEW lone AS SELECT k, v FROM a;", "rw.sql",
                                        dialect="risingwave").runs[0].output] == ["k", "v"]


def test_a_file_with_a_sink_writes_its_sink_and_not_its_other_views():
    assert outputs("""
CREATE MATERIALIZED VIEW m1 AS SELECT k, v FROM a;
CREATE MATERIALIZED VIEW m2 AS SELECT k, w FROM b;
CREATE SINK s FROM m2 WITH (connector = 'files', path = '/out/s');
""") == ["s"]


def test_a_view_with_a_column_named_stream_is_refused_naming_it_when_it_is_one_of_several_outputs():
    with pytest.raises(SqlError, match="'m1' has a column named stream"):
        outputs("""
CREATE MATERIALIZED VIEW m1 AS SELECT k AS stream FROM a;
CREATE MATERIALIZED VIEW m2 AS SELECT k, w FROM b;
""")
