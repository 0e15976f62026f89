"""Differential tests of stream-table joins (issue 44): random shapes whose stream arrives through
projection views, filtering views, KDA pumps and aggregating views, empty, one-row or filtered
out; a table empty, of one row, or of rows with repeated and NULL keys; INNER, stream LEFT JOIN
table, table RIGHT JOIN stream, with and without a condition on the table's side; and the
bucketed table-preserving join (a stream bucketed by FLOOR(ROWTIME TO SECOND) RIGHT JOIN a
table, SEMANTICS §7: each bucket from the first stream row's up to the last, every table row
that matched no stream row of it NULL-extended at the bucket start). Each run is compared with a
plain-Python reading of SEMANTICS §7 written here, independent of the code under test.

Shapes are drawn as tests/lower/test_shape_differential.py draws them: half from a fixed base
seed, half from today's date (STREAMJOIN_SHAPE_SEED overrides it); a failure names the seed."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import pytest
from runtime_helpers import ms, read_output, run_to_end, start, ts, write_jsonl
from test_shape_differential import DAILY_SEED, Wrapped, passes, wrapper_sql

BASE_SEED = 44
# (a bucketed FULL JOIN `run` refuses, naming the RIGHT JOIN it runs: the last test below)
FORMS = ("INNER", "LEFT", "TABLE_RIGHT", "BUCKET_RIGHT")


@dataclass(frozen=True)
class TableShape:
    stream: Wrapped
    table: str  # "some" | "empty" | "one"
    form: str  # FORMS
    table_filter: bool  # ON ... AND t.flag = 1 (a condition on the table's side)
    seed: int

    @property
    def id(self) -> str:
        return f"{self.form}_{self.stream.wrapper}.{self.stream.size}_table.{self.table}{'_flag' if self.table_filter else ''}"


def random_shape(rng: random.Random, seed: int) -> TableShape:
    form = rng.choice(FORMS)
    if form.startswith("BUCKET"):  # its buckets start at the first stream row: rows that pass
        stream = Wrapped(rng.choice(("none", "project")), rng.choice(("some", "some", "one")), 0)
    else:
        wrapper = rng.choice(("none", "project", "filter", "pump", "aggregate"))
        size = rng.choice(("some", "some", "empty", "one", "filtered_out"))
        if size == "filtered_out" and wrapper not in ("filter", "pump"):
            size = "empty"
        stream = Wrapped(wrapper, size, 0)
    return TableShape(stream, rng.choice(("some", "some", "empty", "one")), form, rng.random() < 0.4, seed)


def shapes() -> list[TableShape]:
    out = [random_shape(random.Random(seed), seed) for seed in
           [BASE_SEED * 1000 + i for i in range(3)] + [DAILY_SEED * 1000 + 50 + i for i in range(3)]]
    # always: an outer join behind a pump, an empty table, the hourly report's bucketed RIGHT JOIN
    out.append(TableShape(Wrapped("pump", "some", 0), "some", "LEFT", True, 1))
    out.append(TableShape(Wrapped("filter", "some", 0), "empty", "TABLE_RIGHT", False, 2))
    out.append(TableShape(Wrapped("none", "some", 0), "some", "BUCKET_RIGHT", False, 3))
    return out


def stream_rows(rng: random.Random, size: str) -> list[dict]:
    if size == "empty":
        return []
    count = 1 if size == "one" else rng.randint(4, 14)
    rows = []
    for n in range(count):
        v = rng.randint(10, 13) if size == "filtered_out" else rng.randint(0, 3)
        k = rng.choice([0, 1, 2, 3, None])
        rows.append({"id": n, "c": 0, "k": k, "v": v, "rowtime": rng.randint(0, 8) * 500})
    return rows


def table_rows(rng: random.Random, size: str) -> list[dict]:
    count = {"empty": 0, "one": 1}.get(size, rng.randint(2, 6))
    return [{"tid": 100 + n, "k": rng.choice([0, 1, 1, 2, None]), "flag": rng.randint(0, 1)} for n in range(count)]


def expected(shape: TableShape, rows: list[dict], table: list[dict]) -> Counter:
    """(rowtime ms, stream id, table id) of each result row: SEMANTICS §7 read directly."""
    seen = passes(shape.stream, rows)

    def partners(s):
        return [t for t in table if s["k"] is not None and t["k"] == s["k"] and (not shape.table_filter or t["flag"] == 1)]

    out = Counter()
    if not shape.form.startswith("BUCKET"):
        for s in seen:
            matched = partners(s)
            out.update((s["rowtime"], s["id"], t["tid"]) for t in matched)
            if not matched and shape.form != "INNER":
                out[(s["rowtime"], s["id"], None)] += 1
        return out
    if not seen:
        return out
    first = min(s["rowtime"] for s in seen) // 1000
    last = max(r["rowtime"] for r in rows) // 1000  # end of input: up to the latest rowtime delivered
    for bucket in range(first, last + 1):
        members = [s for s in seen if s["rowtime"] // 1000 == bucket]
        matched_tables = set()
        for s in members:
            matched = partners(s)
            out.update((s["rowtime"], s["id"], t["tid"]) for t in matched)
            matched_tables.update(t["tid"] for t in matched)
        out.update((bucket * 1000, None, t["tid"]) for t in table if t["tid"] not in matched_tables)
    return out


def shape_sql(shape: TableShape, stream_dir, table_dir) -> str:
    sql = (f"CREATE STREAM in0 (id INT, c INT, k INT, v INT) WITH (connector = 'files', format = 'json', "
           f"path = '{stream_dir}', lateness = '10 SECONDS');\n"
           f"CREATE TABLE t (tid INT, k INT, flag INT) WITH (connector = 'files', format = 'json', path = '{table_dir}');\n")
    statements, name = wrapper_sql(0, shape.stream)
    sql += statements
    on = "s.k = t.k" + (" AND t.flag = 1" if shape.table_filter else "")
    select = "SELECT STREAM ROWTIME, s.id AS sid, t.tid AS tid"
    if shape.form == "INNER":
        return sql + f"{select} FROM {name} AS s JOIN t ON {on};"
    if shape.form == "LEFT":
        return sql + f"{select} FROM {name} AS s LEFT JOIN t ON {on};"
    if shape.form == "TABLE_RIGHT":
        return sql + f"{select} FROM t RIGHT JOIN {name} AS s ON {on};"
    return sql + (f"{select} FROM {name} OVER (ORDER BY FLOOR(ROWTIME TO SECOND) RANGE CURRENT ROW) AS s "
                  f"RIGHT JOIN t ON {on};")


SHAPES = shapes()


@pytest.mark.parametrize("shape", [pytest.param(s, id=f"{s.id}-{s.seed}") for s in SHAPES])
def test_a_stream_table_join_gives_what_semantics_7_says_behind_views_pumps_and_empty_inputs(spark, tmp_path, shape):
    rng = random.Random(shape.seed)
    rows = stream_rows(rng, shape.stream.size)
    table = table_rows(rng, shape.table)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    half = len(shuffled) // 2  # two files: the rows arrive out of rowtime order
    write_jsonl(tmp_path / "in0" / "a.json", [{**r, "rowtime": ts(r["rowtime"])} for r in shuffled[:half]])
    write_jsonl(tmp_path / "in0" / "b.json", [{**r, "rowtime": ts(r["rowtime"])} for r in shuffled[half:]])
    write_jsonl(tmp_path / "t" / "t.json", table)
    sql = shape_sql(shape, tmp_path / "in0", tmp_path / "t")
    status = run_to_end(start(spark, sql, tmp_path / "run", until_idle=True))
    out = read_output(tmp_path / "run" / "out")

    context = f"seed {shape.seed}, stream {rows}, table {table}, SQL:\n{sql}"
    assert status["late_rows"] == 0 and not status.get("rejected_rows"), context
    rowtimes = [ms(r["rowtime"]) for r in out]
    assert rowtimes == sorted(rowtimes), f"EMIT FINAL output must come in rowtime order; {context}"
    got = Counter((ms(r["rowtime"]), r["sid"], r["tid"]) for r in out)
    want = expected(shape, rows, table)
    assert got == want, f"missing {want - got}, extra {got - want}; {context}"


def test_a_bucketed_full_join_is_refused_naming_the_right_join_that_runs(tmp_path):
    from streamjoin.errors import Unsupported
    from streamjoin.runtime.pipeline import Pipeline

    sql = shape_sql(TableShape(Wrapped("none", "some", 0), "some", "BUCKET_RIGHT", False, 0), tmp_path, tmp_path)
    with pytest.raises(Unsupported, match=r"runs as `stream OVER \(bucket\) RIGHT JOIN table`"):
        Pipeline.from_sql(sql.replace("RIGHT JOIN t", "FULL JOIN t"), "t.sql")
