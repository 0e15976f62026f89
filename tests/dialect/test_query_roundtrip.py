"""Property: parse -> generate SQL -> parse gives the same plan, for generated queries."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamjoin.dialect import parse_script, to_sql
from streamjoin.plan import compile_sql

DDL = """CREATE STREAM a (k INT, v INT, w INT) WITH (connector = 'files', format = 'json', path = '/in/a');
CREATE STREAM b (k INT, v INT, x INT, ts TIMESTAMP) WITH (rowtime = 'ts', lateness = '10 SECONDS');
CREATE STREAM "C" ("K" INT, y INT);
CREATE TABLE t (k INT PRIMARY KEY, name VARCHAR) WITH (connector = 'files', format = 'csv', path = '/in/t');
"""
STREAMS = {"a": "k", "b": "k", '"C"': '"K"'}

units = st.sampled_from(["SECOND", "MINUTE", "HOUR"])
windows = st.one_of(
    st.just(""),
    st.builds(lambda n, u: f"OVER (RANGE INTERVAL '{n}' {u} PRECEDING)", st.integers(0, 90), units),
    st.builds(
        lambda a, b, u: f"OVER (RANGE BETWEEN INTERVAL '{max(a, b)}' {u} AND INTERVAL '{min(a, b)}' {u} PRECEDING)",
        st.integers(0, 30),
        st.integers(0, 30),
        units,
    ),
    st.builds(lambda n: f"OVER (ROWS {n} PRECEDING)", st.integers(0, 9)),
    st.builds(lambda n: f"OVER (ROWS BETWEEN {n} PRECEDING AND CURRENT ROW)", st.integers(0, 9)),
    st.just("OVER (ROWS CURRENT ROW)"),
    st.just("OVER (RANGE CURRENT ROW)"),
    st.just("OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW)"),
    st.just("OVER w"),
    st.just("OVER (RANGE INTERVAL '1:30' MINUTE TO SECOND PRECEDING)"),
)
join_types = st.sampled_from(["JOIN", "INNER JOIN", "LEFT JOIN", "RIGHT OUTER JOIN", "FULL JOIN", "CROSS JOIN", ","])


@st.composite
def queries(draw):
    names = draw(st.lists(st.sampled_from(list(STREAMS)), min_size=1, max_size=3))
    parts = [f"{names[0]} {draw(windows)} AS s0"]
    for i in range(1, len(names)):
        jt = draw(join_types)
        item = f"{names[i]} {draw(windows)} AS s{i}"
        if jt in ("CROSS JOIN", ","):
            parts.append(f"{jt} {item}" if jt != "," else f", {item}")
            continue
        other = draw(st.integers(0, i - 1))
        cond = f"s{other}.{STREAMS[names[other]]} = s{i}.{STREAMS[names[i]]}"
        if draw(st.booleans()):
            cond += f" AND s{other}.ROWTIME <= s{i}.ROWTIME + INTERVAL '{draw(st.integers(1, 9))}' SECOND"
        parts.append(f"{jt} {item} ON {cond}")
    if draw(st.booleans()):
        parts.append(f"{draw(st.sampled_from(['JOIN', 'LEFT JOIN']))} t ON s0.{STREAMS[names[0]]} = t.k")
    projection = draw(st.sampled_from(["*", "ROWTIME, s0.*", f"s0.ROWTIME AS t0, s{len(names) - 1}.ROWTIME AS t1"]))
    where = f" WHERE s0.{STREAMS[names[0]]} > {draw(st.integers(0, 5))}" if draw(st.booleans()) else ""
    emit = draw(st.sampled_from(["", " EMIT FINAL", " EMIT EAGER", " EMIT CHANGES"]))
    window_clause = " WINDOW w AS (RANGE INTERVAL '2' MINUTE PRECEDING)"
    return f"SELECT STREAM {projection} FROM {' '.join(parts)}{where}{window_clause}{emit}"


def regenerate(sql: str) -> str:
    return ";\n".join(to_sql(s) for s in parse_script(sql)) + ";"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries())
def test_generated_sql_reads_back_into_the_same_plan(query):
    sql = DDL + query + ";"
    plan = compile_sql(sql)
    again = regenerate(sql)
    assert compile_sql(again) == plan
    assert regenerate(again) == again  # generation is a fixed point


def test_seed_queries_read_back_into_the_same_plan():
    from pathlib import Path

    for path in sorted((Path(__file__).parents[1] / "fixtures" / "seeds").glob("*.sql")):
        sql = path.read_text()
        assert compile_sql(regenerate(sql)) == compile_sql(sql), path.name
