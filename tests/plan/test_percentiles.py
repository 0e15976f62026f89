"""PERCENTILE_DISC / PERCENTILE_CONT: SQL's WITHIN GROUP form and s-Server's call form
`"PERCENTILE_DISC"(x, p)` are one aggregate (plan.analyzer.percentiles); corpus sqlstream/09
compares their values with PostgreSQL's (tests/lower/test_corpus_connector_runs.py)."""

from __future__ import annotations

import pytest
from sqlglot import exp
from streamjoin.errors import Unsupported
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan import compile_sql

SOURCE = "CREATE STREAM s (route VARCHAR, v DOUBLE) WITH (connector = 'files', path = '/in/s');\n"


@pytest.mark.parametrize("call", ['"PERCENTILE_DISC"(v, 0.25)', "PERCENTILE_DISC(0.25) WITHIN GROUP (ORDER BY v)"])
def test_both_spellings_of_a_discrete_percentile_are_one_aggregate_that_spark_computes_exactly(call):
    query = compile_sql(SOURCE + f"SELECT STREAM route, {call} AS p FROM s GROUP BY FLOOR(s.ROWTIME TO MINUTE), route;",
                        "q.sql").final
    p = next(o.expression for o in query.output if o.name == "p")
    assert isinstance(p, exp.WithinGroup) and isinstance(p.this, exp.PercentileDisc)
    assert spark_sql(p) == "percentile_disc(0.25) WITHIN GROUP (ORDER BY `s__v`)"  # not sqlglot's PERCENTILE_APPROX


def test_a_percentile_of_a_running_aggregate_is_refused_by_run_naming_it():
    from streamjoin.runtime.pipeline import Pipeline

    with pytest.raises(Unsupported, match="a percentile in a running aggregate"):
        Pipeline.from_sql(SOURCE + 'SELECT STREAM route, "PERCENTILE_CONT"(v, 0.5) AS p FROM s GROUP BY route;', "q.sql")
