"""Every fixture query that `check` accepts runs: each seed query, its streams and tables pointed at
small generated files (PostgreSQL tables of temporal joins at a generated table), goes through
`run --until-idle`. It must finish, or be rejected before any data is read (exit 2, `Unsupported`:
a construct `run` names as not supported yet); a runtime analysis error (Spark's
AnalysisException, a Python error in the plan) fails the test. The physical plan the run records
(status.json, plan.json) is the plan `explain --until-idle` prints."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from pg_helpers import PG_URL, pg_execute
from runtime_helpers import run_until_idle, write_jsonl
from sqlglot import exp
from streamjoin.dialect import parse_script, to_sql
from streamjoin.errors import Unsupported
from streamjoin.lower.explain import explain_json, explain_text
from streamjoin.lower.physical import plan_query
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.plan import compile_sql
from streamjoin.plan import model as m

pytestmark = [pytest.mark.postgres]  # temporal joins' tables are generated in PostgreSQL

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "seeds").glob("*.sql"))
STRINGS = ["IBM", "GOOGL", "MSFT"]
BOUNDED = LoweringOptions(bounded=True)  # `explain --until-idle`, as `run --until-idle` plans
# The seed queries `run` rejects before reading data (exit 2), with the reason it names.
REJECTED_BY_RUN = {
    # Lenses' SELECT TABLE queries of joins (their result is a table that changes as the streams
    # do): `run` runs streaming results that are final or EMIT CHANGES of joins, and running
    # aggregates (a changelog), not a SELECT TABLE join yet
    "s004_key_join": "runs streaming queries",
    "s004_key_join_explicit": "runs streaming queries",
    "s004_more_than_two_sources": "runs streaming queries",
    "s004_outer_join": "runs streaming queries",
    "s004_right_join": "runs streaming queries",
}


def value(sql_type: str, rng: random.Random, i: int):
    t = sql_type.upper()
    if t.startswith(("INT", "BIGINT", "SMALLINT", "TINYINT")):
        return rng.randint(0, 2)
    if t.startswith(("DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL")):
        return rng.randint(0, 20) / 4
    if t.startswith("BOOL"):
        return rng.random() < 0.5
    if t.startswith("DATE"):
        return "2024-01-01"
    if t.startswith("TIMESTAMP"):
        return f"2024-01-01 10:00:{rng.randint(0, 59):02d}.000"
    return rng.choice(STRINGS)


def rows_for(relation: m.Relation, rng: random.Random, n: int = 14) -> list[dict]:
    rows = []
    for i in range(n):
        row = {c.name: value(c.type, rng, i) for c in relation.columns}
        if relation.rowtime:  # in rowtime order, ties included
            row[relation.rowtime] = f"2024-01-01 10:00:{(i * 3) // 2:02d}.{(i % 2) * 500:03d}"
        rows.append(row)
    return rows


def runnable(sql: str, work: Path, rng: random.Random) -> str:
    """The fixture with its streams and tables at generated files (or PostgreSQL tables)."""
    script = compile_sql(sql)
    temporal = {i.relation for q in script.queries for i in q.inputs if i.temporal}
    relations = {r.name: r for r in script.relations if not r.view}
    statements = []
    for st in parse_script(sql):
        kind = st.text("kind").upper() if isinstance(st, exp.Create) else ""
        if kind in ("STREAM", "TABLE", "SOURCE"):
            table = st.this.this if isinstance(st.this, exp.Schema) else st.this
            name = ".".join(p.name.lower() if not p.quoted else p.name for p in table.parts)
            relation = relations.get(name) or next(r for n, r in relations.items() if n.split(".")[-1] == name.split(".")[-1])
            rows = rows_for(relation, rng)
            options = {k: v for k, v in relation.options if k in ("rowtime", "lateness")}
            if relation.name in temporal:
                pg_table = "sj_fixture_" + hashlib.sha1(f"{work}{relation.name}".encode()).hexdigest()[:10]
                columns = ", ".join(f'"{c.name}" {c.type}' for c in relation.columns)
                values = ", ".join("(" + ", ".join(repr(r[c.name]) for c in relation.columns) + ")" for r in rows)
                pg_execute(f"DROP TABLE IF EXISTS {pg_table}; CREATE TABLE {pg_table} ({columns}); INSERT INTO {pg_table} VALUES {values};")
                options.update(connector="postgres", url=PG_URL, table=pg_table)
            else:
                folder = work / "data" / relation.name
                write_jsonl(folder / "rows.json", rows)
                options.update(connector="files", format="json", path=str(folder))
            st.set("properties", exp.Properties(expressions=[
                exp.Property(this=exp.var(k), value=exp.Literal.string(v)) for k, v in options.items()]))
        statements.append(to_sql(st))
    return ";\n".join(statements) + ";\n"


# the slowest runs whose constructs a sibling fixture of `make test` runs too (beast_left_join,
# match_bids_and_asks, inner_join, asof_inner; example_with_rows's rows are tests/lower/test_seed_examples.py's):
# in `make test-long` (make test's time, 2026-11-29)
LONG = ("s000_beast_extra_filters", "s000_example_with_rows", "s002_match_bids_and_asks_named_window", "s004_left_join",
        "s001_asof_left")


@pytest.mark.parametrize("fixture", [pytest.param(f, marks=pytest.mark.long) if f.stem in LONG else f for f in FIXTURES],
                         ids=[f.stem for f in FIXTURES])
def test_an_accepted_fixture_query_runs_or_is_rejected_before_reading_data(spark, tmp_path, fixture):
    rng = random.Random(fixture.stem)
    sql = runnable(fixture.read_text(), tmp_path, rng)
    compile_sql(sql)  # still accepted
    if fixture.stem in REJECTED_BY_RUN:
        with pytest.raises(Unsupported, match=REJECTED_BY_RUN[fixture.stem]):
            run_until_idle(spark, sql, tmp_path / "run")
        assert not (tmp_path / "run" / "checkpoint" / "spark").exists()  # before any data was read
        return
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["state"] == "finished"
    assert status["late_rows"] == 0
    # the plan the run executed (status.json, the checkpoint's plan.json) is the plan `explain --until-idle` prints
    script = compile_sql(sql)
    explained = json.loads(explain_json(script, BOUNDED))["physical"][script.final.name]
    assert status["plan"] == explained
    assert json.loads((tmp_path / "run" / "checkpoint" / "plan.json").read_text()) == explained
    text = explain_text(script, BOUNDED)
    assert all(f"  {line}\n" in text for line in plan_query(script, script.final, BOUNDED).lines())
