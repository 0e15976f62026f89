"""Differential tests of subqueries (issue 67): random EXISTS, NOT EXISTS, IN, NOT IN and scalar
subqueries, run by `streamjoin run` and compared with a plain-Python reading of SQL and
docs/semantics-decisions.md ("Subqueries are joins"), on every input kind:

- two streams bounded in time (the subquery's interval, or windows on both streams), in each
  emission mode, against the reference's `two_way` (tests/reference.py) with LEFT SEMI / LEFT ANTI;
- a stream against a table's snapshot: each row decided against the table's rows;
- RisingWave's sources without a time bound (regular semi / anti / single-row joins) and tables
  the program changes after the view: the changelog folded must be the query's rows over what
  the inputs hold at the end.

Every run holds several cases (the column `c`, which every subquery correlates on): some whose
subquery is empty, some whose subquery's values are all NULL, some whose outer values are all
NULL, the rest random with NULLs among them. Shapes are drawn from a seed (STREAMJOIN_SHAPE_SEED
or today's date for half of them, as tests/lower/test_shape_differential.py); a failure names it."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from runtime_helpers import read_output, run_to_end, run_until_idle, ts, write_jsonl
from test_shape_differential import DAILY_SEED

BASE_SEED = 67
FORMS = ("EXISTS", "NOT EXISTS", "IN", "NOT IN")
CASES = 10
EMPTY, ALL_NULL, OUTER_NULL = 0, 1, 2  # the cases whose subquery is empty / all NULL, whose outer k is NULL


@dataclass(frozen=True)
class SubqueryShape:
    form: str  # FORMS, or SCALAR_COUNT / SCALAR_MAX / SCALAR_ALL (uncorrelated)
    theta: bool  # the subquery also compares v: AND s.v <= t.v + 1
    seed: int
    bound: tuple = ()  # two streams: ("interval", a, b) | ("windows", left s, right s)
    emit: str = "FINAL"

    @property
    def id(self) -> str:
        bound = "-".join(map(str, self.bound)) or "unbounded"
        return f"{self.form.replace(' ', '_')}{'_theta' if self.theta else ''}_{bound}_{self.emit}_seed{self.seed}"


def seeds(count: int, offset: int) -> list[int]:
    return [BASE_SEED * 1000 + offset + i if i < count // 2 else DAILY_SEED * 1000 + offset + i for i in range(count)]


def rows_of(rng: random.Random, side: str, null_k: float = 0.15) -> list[dict]:
    """Rows of every case; `side` "outer" or "sub" decides which cases are emptied or nulled."""
    rows = []
    for c in range(CASES):
        if side == "sub" and c == EMPTY:
            continue
        for _ in range(rng.randint(1, 6)):
            k = None if rng.random() < null_k else rng.randint(0, 2)
            if (side == "sub" and c == ALL_NULL) or (side == "outer" and c == OUTER_NULL):
                k = None
            v = None if side == "sub" and rng.random() < 0.1 else rng.randint(0, 3)
            rows.append({"id": len(rows), "c": c, "k": k, "v": v, "rowtime": rng.randint(0, 16) * 500})
    return rows


def theta_holds(outer: dict, row: dict) -> bool:
    return outer["v"] is not None and row["v"] is not None and outer["v"] <= row["v"] + 1


def correlated(outer: dict, rows: list[dict], theta: bool) -> list[dict]:
    """The subquery's rows for one outer row: its case, and v's comparison if the shape has one."""
    return [r for r in rows if r["c"] == outer["c"] and (not theta or theta_holds(outer, r))]


def matches(form: str, outer: dict, row: dict) -> bool:
    """The semi / anti join's condition beyond the correlation: k's equality, null-aware for NOT IN."""
    if form == "NOT IN":
        return outer["k"] is None or row["k"] is None or outer["k"] == row["k"]
    return outer["k"] is not None and outer["k"] == row["k"]


def passes(form: str, outer: dict, rows: list[dict], theta: bool) -> bool:
    """SQL's WHERE over all of the subquery's rows (NOT IN three-valued: UNKNOWN drops the row)."""
    found = any(matches(form, outer, r) for r in correlated(outer, rows, theta))
    return found if form in ("EXISTS", "IN") else not found


def condition_sql(form: str, theta: bool, outer: str, sub: str, table: str, extra: str = "") -> str:
    where = f"{sub}.c = {outer}.c" + (f" AND {outer}.v <= {sub}.v + 1" if theta else "") + extra
    if form in ("EXISTS", "NOT EXISTS"):
        return f"{form} (SELECT * FROM {table} AS {sub} WHERE {where} AND {sub}.k = {outer}.k)"
    return f"{outer}.k {form} (SELECT k FROM {table} AS {sub} WHERE {where})"


# ---- two streams bounded in time -------------------------------------------------------------


def random_stream_shape(seed: int) -> SubqueryShape:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        bound = ("interval", rng.randint(0, 3), rng.randint(0, 3))
    else:
        bound = ("windows", rng.randint(1, 3), rng.randint(1, 3))
    return SubqueryShape(rng.choice(FORMS), rng.random() < 0.4, seed, bound, rng.choice(("FINAL", "EAGER", "CHANGES")))


STREAM_SHAPES = [random_stream_shape(s) for s in seeds(6, 0)]


@pytest.mark.parametrize("shape", [s if i == 0 else pytest.param(s, marks=pytest.mark.long)
                                   for i, s in enumerate(STREAM_SHAPES)], ids=lambda s: s.id)
def test_a_random_subquery_over_two_streams_bounded_in_time_gives_the_references_rows(spark, tmp_path, shape):
    import reference as ref
    from test_differential import compare, ddl

    rng = random.Random(shape.seed)
    streams = [rows_of(rng, "outer", 0.1), rows_of(rng, "sub")]
    dirs = []
    for i, rows in enumerate(streams):
        shuffled = rows[:]
        rng.shuffle(shuffled)
        write_jsonl(tmp_path / f"in{i}" / "a.json", [{**r, "rowtime": ts(r["rowtime"])} for r in shuffled])
        dirs.append(tmp_path / f"in{i}")
    if shape.bound[0] == "interval":
        _, a, b = shape.bound
        lwin, rwin = ("range", b * 1000, 0), ("range", a * 1000, 0)
        outer_window, sub_table = "", "in1"
        extra = (f" AND s1.ROWTIME BETWEEN s0.ROWTIME - INTERVAL '{a}' SECOND"
                 f" AND s0.ROWTIME + INTERVAL '{b}' SECOND")
    else:
        _, lsize, rsize = shape.bound
        lwin, rwin = ("range", lsize * 1000, 0), ("range", rsize * 1000, 0)
        outer_window = f"OVER (RANGE INTERVAL '{lsize}' SECOND PRECEDING)"
        sub_table, extra = f"in1 OVER (RANGE INTERVAL '{rsize}' SECOND PRECEDING)", ""
    condition = condition_sql(shape.form, shape.theta, "s0", "s1", sub_table, extra)
    sql = ddl(dirs) + (f"SELECT STREAM ROWTIME, s0.c AS c, s0.id AS id0, CAST(NULL AS INT) AS id1 "
                       f"FROM in0 {outer_window} AS s0 WHERE {condition} EMIT {shape.emit};")
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["late_rows"] == 0

    def predicate(a, b):
        return matches(shape.form, a, b) and (not shape.theta or theta_holds(a, b))

    join_type = "SEMI" if shape.form in ("EXISTS", "IN") else "ANTI"
    expected = {}
    for c in range(CASES):
        left = [r for r in streams[0] if r["c"] == c]
        right = [r for r in streams[1] if r["c"] == c]
        result = ref.two_way(ref.Side("s0", left, lwin), ref.Side("s1", right, rwin), join_type, predicate, shape.emit)
        expected[c] = [(op, t, None if li is None else left[li]["id"], None) for op, t, li, _ri, *_ in result]
    for c in range(CASES, 14):  # compare() reads test_differential's 14 cases
        expected[c] = []
    compare(rows, shape.emit, expected)


def random_window_shape(seed: int) -> SubqueryShape:
    """TUMBLE or HOP windows on both streams, the subquery's joined on window_start (Flink's window
    semi / anti join): ("tumble", size s) or ("hop", slide s, size s)."""
    rng = random.Random(seed)
    bound = ("tumble", rng.randint(1, 3)) if rng.random() < 0.5 else ("hop", 1, rng.randint(2, 3))
    return SubqueryShape(rng.choice(FORMS), rng.random() < 0.4, seed, bound)


WINDOW_SHAPES = [random_window_shape(s) for s in seeds(4, 400)]


@pytest.mark.long  # (make test's time: the window joins' operator path is the stream shapes' one)
@pytest.mark.parametrize("shape", WINDOW_SHAPES, ids=lambda s: s.id)
def test_a_random_subquery_over_tumble_or_hop_windows_gives_the_references_rows_per_window(spark, tmp_path, shape):
    import reference as ref
    from runtime_helpers import ms

    rng = random.Random(shape.seed)
    streams = [rows_of(rng, "outer", 0.1), rows_of(rng, "sub")]
    for i, rows in enumerate(streams):
        write_jsonl(tmp_path / f"in{i}" / "a.json", [{**r, "rowtime": ts(r["rowtime"])} for r in
                                                     sorted(rows, key=lambda r: r["rowtime"])])
    function = shape.bound[0].upper()
    size = shape.bound[-1]
    slide = size if function == "TUMBLE" else shape.bound[1]

    def tvf(i: int) -> str:
        if function == "TUMBLE":
            return f"TUMBLE(in{i}, rowtime, INTERVAL '{size}' SECOND)"
        return f"HOP(in{i}, rowtime, INTERVAL '{slide}' SECOND, INTERVAL '{size}' SECOND)"

    from test_differential import ddl

    condition = condition_sql(shape.form, shape.theta, "s0", "s1", tvf(1), " AND s1.window_start = s0.window_start")
    sql = ddl([tmp_path / "in0", tmp_path / "in1"]) + (
        f"SELECT STREAM ROWTIME, s0.c AS c, s0.id AS id0, s0.window_start AS ws FROM {tvf(0)} AS s0 WHERE {condition};")
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")

    def predicate(a, b):
        return matches(shape.form, a, b) and (not shape.theta or theta_holds(a, b))

    join_type = "SEMI" if shape.form in ("EXISTS", "IN") else "ANTI"
    for c in range(CASES):
        left = [r for r in streams[0] if r["c"] == c]
        right = [r for r in streams[1] if r["c"] == c]
        result = ref.window_join(ref.Side("s0", left, ("range", 0, 0)), ref.Side("s1", right, ("range", 0, 0)),
                                 function, size * 1000, slide * 1000, join_type, predicate)
        expected = sorted((t, left[li]["id"], ws) for _, t, li, _, ws in result)
        got = sorted((ms(r["rowtime"]), r["id0"], ms(r["ws"])) for r in rows if r["c"] == c)
        assert got == expected, f"case {c}: {sql}"


# ---- a stream against a table's snapshot -----------------------------------------------------

SNAPSHOT_FORMS = FORMS + ("SCALAR_COUNT", "SCALAR_MAX", "SCALAR_ALL")


def random_snapshot_shape(seed: int) -> SubqueryShape:
    """(a correlated scalar subquery compares by equalities only: `run` refuses its theta)"""
    rng = random.Random(seed)
    form = rng.choice(SNAPSHOT_FORMS)
    return SubqueryShape(form, rng.random() < 0.4 and not form.startswith("SCALAR"), seed)


SNAPSHOT_SHAPES = [random_snapshot_shape(s) for s in seeds(6, 100)]
# always: NOT IN's null-aware condition (no equality: a nested loop over the snapshot), a correlated COUNT
SNAPSHOT_SHAPES += [SubqueryShape("NOT IN", True, 1), SubqueryShape("SCALAR_COUNT", False, 2)]


def scalar_sql(form: str, theta: bool, outer: str, sub: str, table: str) -> str:
    """The scalar forms: a correlated COUNT in SELECT, a correlated MAX and an uncorrelated AVG in WHERE."""
    where = f"{sub}.c = {outer}.c AND {sub}.k = {outer}.k"
    if form == "SCALAR_COUNT":
        return f"(SELECT COUNT(*) FROM {table} AS {sub} WHERE {where})"
    if form == "SCALAR_MAX":
        return f"{outer}.v <= (SELECT MAX(v) FROM {table} AS {sub} WHERE {where})"
    return f"{outer}.v >= (SELECT AVG(v) FROM {table} AS {sub})"


def expected_rows(form: str, theta: bool, outer_rows: list[dict], sub_rows: list[dict]) -> list[tuple]:
    """(id, n) of every outer row the query keeps; n is the count of SCALAR_COUNT, else None."""
    out = []
    for o in outer_rows:
        same = [r for r in correlated(o, sub_rows, theta) if o["k"] is not None and r["k"] == o["k"]]
        if form == "SCALAR_COUNT":
            out.append((o["id"], len(same)))
        elif form == "SCALAR_MAX":
            values = [r["v"] for r in same if r["v"] is not None]
            if values and o["v"] is not None and o["v"] <= max(values):
                out.append((o["id"], None))
        elif form == "SCALAR_ALL":
            values = [r["v"] for r in sub_rows if r["v"] is not None]
            if values and o["v"] is not None and o["v"] >= sum(values) / len(values):
                out.append((o["id"], None))
        elif passes(form, o, sub_rows, theta):
            out.append((o["id"], None))
    return sorted(out, key=repr)


def query_sql(shape: SubqueryShape, outer_from: str, outer: str, sub: str, table: str, stream: bool) -> str:
    """The query over `outer_from AS outer` whose subquery reads `table AS sub`: its ids (and counts)."""
    head = f"SELECT{' STREAM' if stream else ''} {outer}.id AS id"
    if shape.form == "SCALAR_COUNT":
        return f"{head}, {scalar_sql(shape.form, shape.theta, outer, sub, table)} AS n FROM {outer_from} AS {outer}"
    if shape.form.startswith("SCALAR"):
        where = scalar_sql(shape.form, shape.theta, outer, sub, table)
    else:
        where = condition_sql(shape.form, shape.theta, outer, sub, table)
    return f"{head} FROM {outer_from} AS {outer} WHERE {where}"


@pytest.mark.parametrize("shape", [s if s.seed == 1 else pytest.param(s, marks=pytest.mark.long)
                                   for s in SNAPSHOT_SHAPES], ids=lambda s: s.id)
def test_a_random_subquery_of_a_stream_against_a_table_decides_each_row_against_the_snapshot(spark, tmp_path, shape):
    rng = random.Random(shape.seed)
    events, table = rows_of(rng, "outer", 0.1), rows_of(rng, "sub")
    write_jsonl(tmp_path / "events" / "e.json", [{**r, "rowtime": ts(r["rowtime"])} for r in
                                                 sorted(events, key=lambda r: r["rowtime"])])
    write_jsonl(tmp_path / "facts" / "f.json", [{k: r[k] for k in ("c", "k", "v")} for r in table])
    sql = (f"CREATE STREAM events (id INT, c INT, k INT, v INT) WITH (connector = 'files', format = 'json', "
           f"path = '{tmp_path / 'events'}');\n"
           f"CREATE TABLE facts (c INT, k INT, v INT) WITH (connector = 'files', format = 'json', "
           f"path = '{tmp_path / 'facts'}');\n"
           + query_sql(shape, "events", "e", "f", "facts", stream=True) + ";")
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["state"] == "finished"
    got = sorted(((r["id"], r.get("n")) for r in rows), key=repr)
    assert got == expected_rows(shape.form, shape.theta, events, table), sql


# ---- no time bound: RisingWave's sources, and tables the program changes ----------------------

REGULAR_SHAPES = [random_snapshot_shape(s) for s in seeds(6, 200)]
REGULAR_SHAPES += [SubqueryShape("NOT IN", True, 3), SubqueryShape("SCALAR_MAX", False, 4)]


def folded(rows: list[dict]) -> list[tuple]:
    """An EMIT CHANGES changelog folded to the rows it leaves: (id, n)."""
    content: dict = {}
    for r in rows:
        key = (r["id"], r.get("n"))
        content[key] = content.get(key, 0) + (-1 if r.get("op") == "-D" else 1)
        assert content[key] >= 0, f"-D of {key}, which is not in the view"
    return sorted((k for k, n in content.items() for _ in range(n)), key=repr)


def regular_cases():
    """Every shape on streamjoin's operator; the semi / anti ones on the micro-batch loop too."""
    for i, shape in enumerate(REGULAR_SHAPES):
        for engine in ("operator", "batch", "bounded"):
            if engine != "operator" and shape.form.startswith("SCALAR"):
                continue  # (a scalar subquery is a LEFT join: a changelog, the operator's)
            marks = () if i == 0 and engine != "batch" else (pytest.mark.long,)
            yield pytest.param(shape, engine, marks=marks, id=f"{shape.id}-{engine}")


@pytest.mark.parametrize(("shape", "engine"), list(regular_cases()))
def test_a_random_subquery_over_sources_without_a_time_bound_folds_to_sqls_rows_over_all_of_them(
        spark, tmp_path, shape, engine):
    """On streamjoin's operator (a changelog), and a semi or anti join on the micro-batch loop,
    where a bounded run (--until-idle) runs it (its anti rows written at the end of input): the
    same fold, over two micro-batches (a bounded run: every file there at its start)."""
    from streamjoin.runtime.pipeline import Pipeline
    from streamjoin.settings import Settings

    rng = random.Random(shape.seed)
    outer, sub = rows_of(rng, "outer", 0.1), rows_of(rng, "sub")
    strip = ("id", "c", "k", "v")
    rng.shuffle(outer)  # (the sources' rows in no particular order)
    rng.shuffle(sub)
    half_o, half_s = len(outer) // 2, len(sub) // 2
    write_jsonl(tmp_path / "outer_src" / "a.json", [{k: r[k] for k in strip} for r in outer[:half_o]])
    write_jsonl(tmp_path / "sub_src" / "a.json", [{k: r[k] for k in ("c", "k", "v")} for r in sub[:half_s]])
    program = (f"CREATE SOURCE outer_src (id INT, c INT, k INT, v INT) WITH (connector = 'files', "
               f"path = '{tmp_path / 'outer_src'}') FORMAT PLAIN ENCODE JSON;\n"
               f"CREATE SOURCE sub_src (c INT, k INT, v INT) WITH (connector = 'files', "
               f"path = '{tmp_path / 'sub_src'}') FORMAT PLAIN ENCODE JSON;\n"
               f"CREATE MATERIALIZED VIEW mv AS {query_sql(shape, 'outer_src', 'o', 's', 'sub_src', stream=False)};\n")
    settings = Settings(join_operator="batch") if engine == "batch" else None

    def second_half():
        write_jsonl(tmp_path / "sub_src" / "b.json", [{k: r[k] for k in ("c", "k", "v")} for r in sub[half_s:]])
        write_jsonl(tmp_path / "outer_src" / "b.json", [{k: r[k] for k in strip} for r in outer[half_o:]])
    if engine == "bounded":
        second_half()
    pipeline = Pipeline.from_sql(program, "rw.sql", settings, dialect="risingwave")
    runner = pipeline.runner(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=engine == "bounded").start()
    assert (runner.plan["run"] == "interval join") == (engine != "operator"), runner.plan
    if engine != "bounded":
        runner.process_available()
        second_half()
    status = run_to_end(runner)
    assert status["state"] == "finished", status
    assert folded(read_output(tmp_path / "out")) == expected_rows(shape.form, shape.theta, outer, sub), program


CHANGED_SHAPES = [random_snapshot_shape(s) for s in seeds(4, 300)]


def values(rows: list[dict], columns: tuple[str, ...]) -> str:
    return ", ".join("(" + ", ".join("NULL" if r[c] is None else str(r[c]) for c in columns) + ")" for r in rows)


@pytest.mark.long  # (make test runs the tables the program changes in test_subquery_joins_run.py)
@pytest.mark.parametrize("shape", CHANGED_SHAPES, ids=lambda s: s.id)
def test_a_random_subquery_over_tables_the_program_changes_gives_the_view_as_the_tables_end(spark, tmp_path, shape):
    from streamjoin.runtime.pipeline import Pipeline

    rng = random.Random(shape.seed)
    outer, sub = rows_of(rng, "outer", 0.1), rows_of(rng, "sub")
    for i, r in enumerate(sub):
        r["id"] = 1000 + i  # the subquery's rows told apart, to delete some
    first_o, first_s = outer[: len(outer) // 2], sub[: len(sub) // 2]
    later_o, later_s = outer[len(outer) // 2:], sub[len(sub) // 2:]
    deleted = set(rng.sample([r["id"] for r in sub], len(sub) // 4)) | set(rng.sample([r["id"] for r in outer], 3))
    program = ("CREATE TABLE o_t (id INT, c INT, k INT, v INT);\nCREATE TABLE s_t (id INT, c INT, k INT, v INT);\n"
               f"INSERT INTO o_t VALUES {values(first_o, ('id', 'c', 'k', 'v'))};\n"
               + (f"INSERT INTO s_t VALUES {values(first_s, ('id', 'c', 'k', 'v'))};\n" if first_s else "")
               + f"CREATE MATERIALIZED VIEW mv AS {query_sql(shape, 'o_t', 'o', 's', 's_t', stream=False)};\n"
               + (f"INSERT INTO s_t VALUES {values(later_s, ('id', 'c', 'k', 'v'))};\n" if later_s else "")
               + f"DELETE FROM s_t WHERE id IN ({', '.join(str(i) for i in sorted(deleted))});\n"
               + f"INSERT INTO o_t VALUES {values(later_o, ('id', 'c', 'k', 'v'))};\n"
               + f"DELETE FROM o_t WHERE id IN ({', '.join(str(i) for i in sorted(deleted))});\n")
    pipeline = Pipeline.from_sql(program, "s.sql", dialect="risingwave")
    statuses = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert all(s["state"] == "finished" for s in statuses.values()), statuses
    kept_o = [r for r in outer if r["id"] not in deleted]
    kept_s = [r for r in sub if r["id"] not in deleted]
    assert folded(read_output(tmp_path / "out")) == expected_rows(shape.form, shape.theta, kept_o, kept_s), program
