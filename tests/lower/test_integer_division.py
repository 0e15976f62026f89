"""Integer division (docs/semantics-decisions.md): `a / b` of integer operands is an integer,
truncated toward zero, as PostgreSQL, RisingWave and Calcite (s-Server, KDA) give it; a cast or
a non-integer operand keeps the fraction. Spark's `/` gave 3.5 for 7 / 2 before 2026-11-27."""

from __future__ import annotations

import pytest
from runtime_helpers import write_jsonl
from streamjoin.plan import compile_sql


def test_the_plan_divides_integers_as_integers_and_keeps_casts_and_unknown_types_as_written():
    sql = """CREATE STREAM a (k INT, v BIGINT, d DOUBLE, s VARCHAR) WITH (path = '/tmp/a');
CREATE VIEW w AS SELECT STREAM a.k * 2 AS k2, a.d AS d, UPPER(a.s) AS u FROM a;
SELECT STREAM w.k2 / 4 AS q, w.d / 2 AS f FROM w;"""
    script = compile_sql(sql, "d.sql")
    view, top = script.view("w"), script.queries[-1]
    assert [c.type for c in script.relation("w").columns if c.name != "rowtime"] == ["INTEGER", "DOUBLE PRECISION", "UNKNOWN"]
    assert [o.expression.sql(dialect="spark") for o in top.output] == ["w.k2 DIV 4", "w.d / 2"]
    assert view.output[0].expression.sql() == "a.k * 2"
    nested = compile_sql("CREATE STREAM a (k INT) WITH (path = '/tmp/a');\nSELECT STREAM 7 / 2 / 2 AS x, (a.k / 2 + 1) / 2 AS y FROM a;", "n.sql")
    assert [o.expression.sql(dialect="spark") for o in nested.queries[-1].output] == ["7 DIV 2 DIV 2", "(a.k DIV 2 + 1) DIV 2"]
    union = compile_sql("""CREATE STREAM a (k INT, d DOUBLE) WITH (path = '/tmp/a');
CREATE VIEW u AS SELECT STREAM a.k AS x FROM a UNION ALL SELECT STREAM a.d FROM a;
SELECT STREAM u.x / 2 AS h FROM u;""", "u.sql")  # an INT branch and a DOUBLE one: not an integer
    assert union.queries[-1].output[0].expression.sql(dialect="spark") == "u.x / 2"


@pytest.mark.parametrize("dialect", ["default", pytest.param("risingwave", marks=pytest.mark.long)])
def test_integer_operands_give_a_truncated_integer_and_a_cast_keeps_the_fraction(spark, tmp_path, dialect):
    sql = f"""CREATE STREAM a (k INT, v INT) WITH (path = '{tmp_path}/a');
SELECT STREAM a.k / a.v AS q, a.k / 2 AS h, -7 / 2 AS n, CAST(a.k AS DOUBLE) / a.v AS f, a.k / 2.0 AS g, COUNT(*) / 2 AS c
FROM a GROUP BY FLOOR(a.ROWTIME TO MINUTE), a.k, a.v;"""
    write_jsonl(tmp_path / "a" / "1.json", [{"k": 7, "v": 2, "rowtime": "2024-01-01 00:00:01"},
                                            {"k": -7, "v": 2, "rowtime": "2024-01-01 00:00:02"},
                                            {"k": 5, "v": None, "rowtime": "2024-01-01 00:00:03"}])
    from streamjoin.runtime.pipeline import Pipeline

    runner = Pipeline.from_sql(sql, "d.sql", dialect=dialect).runner(spark, tmp_path / "checkpoint", str(tmp_path / "out"),
                                                                       until_idle=True)
    from runtime_helpers import read_output, run_to_end

    run_to_end(runner.start())
    rows = sorted(((r["q"], r["h"], r["n"], r["f"], float(r["g"]), r["c"]) for r in read_output(tmp_path / "out")),
                  key=lambda r: r[1])
    assert rows == [(-3, -3, -3, -3.5, -3.5, 0), (None, 2, -3, None, 2.5, 0), (3, 3, -3, 3.5, 3.5, 0)], rows
