"""The corpus's programs run end to end (issue 39): every program that `check` accepts and whose
inputs are files (or rows the program writes itself) runs `--until-idle` on generated input, as
written, its paths pointed at a folder of the test's. Each run must finish without an error, read
every generated row (none rejected) and write rows of the program's own output columns; a
program that is one stream-stream window join of two declared streams must give exactly the
reference's rows (tests/reference.py, SEMANTICS.md §3-§5).

Programs that read Kafka run on a broker in tests/lower/test_corpus_kafka_runs.py; those that read
CDC or datagen are not run; the count of runnable ones is pinned so that a program can not
silently drop out."""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest
import reference as ref
from sqlglot import exp
from streamjoin.plan import compile_sql
from streamjoin.plan.model import Kind, Relation, Script
from streamjoin.runtime.pipeline import Pipeline

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
START = dt.datetime(2026, 11, 27, 10, 0, 0)


def _header_ok(path: Path) -> bool:
    return any(line.strip() == "-- check: ok" for line in path.read_text().splitlines()[:8])


def inputs_of(script: Script) -> list[Relation]:
    """The declared relations the script's runs read, through its views."""
    seen: dict[str, Relation] = {}

    def walk(query):
        for i in query.inputs:
            relation = script.relation(i.relation)
            if relation.view:
                walk(script.view(relation.name))
            else:
                seen.setdefault(relation.name, relation)

    for query in script.runs:
        walk(query)
    return list(seen.values())


def runnable(path: Path) -> bool:
    head = path.read_text().splitlines()[:8]
    if not _header_ok(path) or any(line.startswith("-- database:") for line in head):
        return False  # a program whose check reads a database's catalog reads that database too
    script = compile_sql(path.read_text(), path.name)
    return all((r.option("connector") or "").lower() in ("files", "values") for r in inputs_of(script))


PROGRAMS = sorted(p for p in CORPUS.glob("*/*.sql") if runnable(p))


def test_the_corpus_has_programs_of_three_dialects_that_run_here():
    by_dialect = {p.parent.name for p in PROGRAMS}
    assert len(PROGRAMS) >= 19 and {"kda", "lenses", "sqlstream"} <= by_dialect, [p.name for p in PROGRAMS]


def value_of(sql_type: str, rng: random.Random, n: int):
    t = sql_type.upper()
    if t.startswith(("STRUCT<", "ROW(")):
        from sqlglot import exp

        parsed = exp.DataType.build(sql_type, dialect="risingwave")
        return {f.name: value_of(f.args["kind"].sql(dialect="risingwave"), rng, n) for f in parsed.expressions}
    if t.startswith("TIMESTAMP"):
        return (START + dt.timedelta(seconds=rng.randrange(0, 60))).isoformat(sep=" ")
    if t.startswith("DATE"):
        return "2026-11-27"
    if t.startswith(("INT", "BIGINT", "SMALLINT", "TINYINT", "INTEGER")):
        return rng.randrange(1, 4)
    if t.startswith(("DECIMAL", "NUMERIC")):  # within the declared precision: DECIMAL(1,1) holds 0.1 .. 0.9
        digits = [int(d) for d in re.findall(r"\d+", t)] or [10, 2]
        scale = digits[1] if len(digits) > 1 else 0
        whole = 10 ** (digits[0] - scale) - 1
        return round(rng.uniform(0, whole + 0.9) if whole else rng.uniform(0.1, 0.9), scale)
    if t.startswith(("DOUBLE", "FLOAT", "REAL")):
        return round(rng.uniform(1, 100), 2)
    if t.startswith("BOOL"):
        return rng.random() < 0.5
    width = re.search(r"\((\d+)\)", t)
    text = rng.choice(["a", "b", "c"])
    return text[: int(width.group(1))] if width else text


def file_name(relation: Relation) -> str:
    """A name the relation's `pattern` (if any) matches whole."""
    fmt = (relation.option("format") or ("json" if relation.kind == Kind.STREAM else "csv")).lower()
    pattern = relation.option("pattern")
    if not pattern:
        return f"rows.{fmt}"
    for candidate in (pattern.replace("\\.", "."), re.sub(r"\.\*|\\", "", pattern), f"x.{fmt}"):
        if re.fullmatch(pattern, candidate):
            return candidate
    raise AssertionError(f"no file name for the pattern {pattern!r} of {relation.name}")


def generate(relation: Relation, folder: Path, rng: random.Random, rows: int = 12) -> list[dict]:
    """Rows for one input, in rowtime order for a stream, written where the program reads them."""
    fmt = (relation.option("format") or ("json" if relation.kind == Kind.STREAM else "csv")).lower()
    out = []
    for n in range(rows):
        row = {c.name: value_of(c.type, rng, n) for c in relation.columns}
        if relation.kind == Kind.STREAM:
            row[relation.rowtime] = (START + dt.timedelta(seconds=5 * n)).isoformat(sep=" ")
        out.append(row)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / file_name(relation)
    if fmt == "json":
        target.write_text("".join(json.dumps(r) + "\n" for r in out))
    else:
        with target.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(out[0]))
            writer.writeheader()
            writer.writerows(out)
    return out


# programs `check` accepts and `run` refuses before reading data, and why (docs/semantics-decisions.md)
RUN_REFUSES: dict[str, str] = {}


def test_every_program_run_refuses_is_in_the_corpus_and_runnable_here():
    assert set(RUN_REFUSES) <= {f"{p.parent.name}/{p.stem}" for p in PROGRAMS}


# programs whose run takes long (a 13-step StreamLab app: five parts of its own, a minute; a running
# aggregate over a staged join, as seed 004's grouping in test_run_accepted_fixtures): make test-long
LONG_RUNS = {"sqlstream/04_streamlab_device_lookup_inner_left_table_join", "lenses/05_nested_field_to_key_two_inserts",
             # nine parts of its own, 47 s (its constructs each run in make test: test_operator_views,
             # test_order_within, test_run_script_constructs)
             "sqlstream/03_handover_usage_rows_current_row_join"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.long) if f"{p.parent.name}/{p.stem}" in LONG_RUNS else p
                                  for p in PROGRAMS], ids=[f"{p.parent.name}/{p.stem}" for p in PROGRAMS])
def test_a_corpus_program_runs_on_generated_input_and_writes_its_columns(spark, tmp_path, path):
    from streamjoin.errors import Unsupported

    sql = path.read_text()
    refused = RUN_REFUSES.get(f"{path.parent.name}/{path.stem}")
    if refused is not None:
        with pytest.raises(Unsupported, match=re.escape(refused)):
            Pipeline.from_sql(sql, path.name)
        return
    script = compile_sql(sql, path.name)
    rng = random.Random(path.name)
    folders: dict[str, Path] = {}
    generated: dict[str, list[dict]] = {}
    for relation in inputs_of(script):
        if relation.option("connector") == "values":
            continue
        where = relation.option("path")
        folders.setdefault(where, tmp_path / "in" / f"{len(folders)}")
        generated[relation.name] = generate(relation, folders[where], rng)
    for where, folder in sorted(folders.items(), key=lambda kv: -len(kv[0])):
        sql = sql.replace(f"'{where}'", f"'{folder}'")
    pipeline = Pipeline.from_sql(sql, path.name)
    rows = run_whole(spark, tmp_path, pipeline)
    expected = reference_rows(pipeline.script, generated)
    if expected is not None:
        compared, want = expected
        assert Counter(tuple(row.get(c) for c in compared) for row in rows) == want, (compared, rows)


def assert_finished(statuses: dict) -> None:
    """Every part of a corpus program's run finished, without an error or a rejected row."""
    for name, status in statuses.items():
        assert status["state"] == "finished" and not status.get("error"), (name, status)
        assert not status.get("rejected_rows"), (name, status)


def assert_columns(rows: list[dict], pipeline) -> None:
    """Each row holds only columns the program writes (and the rowtime, stream and op keys)."""
    columns = {c.name for q in pipeline.script.runs for c in q.output}
    # a table sink's output is its table's rows (runtime.table_sinks): the table's columns
    columns |= {c.name for q in pipeline.script.runs for r in pipeline.script.relations if r.name == q.sink and not r.view
                for c in r.columns}
    for row in rows:
        assert set(row) - {"rowtime", "stream", "ROWTIME", "op"} <= columns | {c.lower() for c in columns}, (row, columns)


def run_whole(spark, tmp_path, pipeline) -> list[dict]:
    """The program run to the end of its input into tmp_path/out: its rows (JSON Lines), checked
    by `assert_finished` and `assert_columns`."""
    out = tmp_path / "out"
    assert_finished(pipeline.run(spark, tmp_path / "checkpoint", str(out), until_idle=True))
    rows = [json.loads(line) for part in sorted(out.rglob("part-*.jsonl")) for line in part.read_text().splitlines()]
    assert_columns(rows, pipeline)
    return rows


_PLAIN = ("INT", "BIGINT", "SMALLINT", "TINYINT", "INTEGER", "VARCHAR", "CHAR", "TEXT", "STRING", "BOOLEAN",
          "DOUBLE", "FLOAT", "REAL")


def _value(node, combo):
    """A key or output column's value in a composite row {alias: row or None}."""
    if isinstance(node, exp.Dot):
        inner = _value(node.this, combo)
        return None if inner is None else inner.get(node.expression.name)
    if isinstance(node, exp.Column) and node.table in combo:
        row = combo[node.table]
        return None if row is None else row.get(node.name)
    raise LookupError(node)


def plain_window_join(script: Script):
    """(query, its two declared streams, the output columns compared) for a program that is one
    stream-stream window join of two declared streams on equal keys (no WHERE, no aggregate,
    EMIT FINAL); None for any other."""
    from streamjoin.plan.windows import RangeWindow

    if len(script.runs) != 1:
        return None
    query = script.runs[0]
    if len(query.inputs) != 2 or len(query.joins) != 1 or query.where is not None or query.aggregation is not None \
            or query.emit.value != "FINAL":
        return None
    relations = [script.relation(i.relation) for i in query.inputs]
    if any(r.view or r.kind != Kind.STREAM for r in relations) or any(not isinstance(i.window, RangeWindow) for i in query.inputs):
        return None
    condition = query.joins[0].condition
    conjuncts = list(condition.expression.flatten()) if isinstance(condition.expression, exp.And) else [condition.expression]
    if condition.residual or not condition.keys or len(conjuncts) != len(condition.keys):
        return None
    empty = {i.alias: {} for i in query.inputs}
    try:
        for left, right in condition.keys:
            _value(left, empty), _value(right, empty)
    except LookupError:
        return None
    types = {(i.alias, c.name): c.type.upper() for i, r in zip(query.inputs, relations, strict=True) for c in r.columns}
    compared = [c for c in query.output if isinstance(c.expression, exp.Column)
                and types.get((c.expression.table, c.expression.name), "").startswith(_PLAIN)]
    return (query, relations, compared) if compared else None


def reference_rows(script: Script, generated: dict[str, list[dict]]) -> tuple[list[str], Counter] | None:
    """(the output columns compared, the reference's multiset of their values) for a program
    `plain_window_join` accepts; None for any other."""
    plain = plain_window_join(script)
    if plain is None:
        return None
    query, relations, compared = plain
    streams = []
    for i, r in zip(query.inputs, relations, strict=True):
        rows = [{**row, "rowtime": int((dt.datetime.fromisoformat(row[r.rowtime]) - START).total_seconds() * 1000)}
                for row in generated[r.name]]
        streams.append(ref.Stream(i.alias, rows, i.window.size_ms, i.window.lag_ms))
    keys = query.joins[0].condition.keys

    def holds(combo):
        return all((a := _value(left, combo)) is not None and a == _value(right, combo) for left, right in keys)

    def project(combo):
        return tuple(_value(c.expression, combo) for c in compared)

    got = ref.results(streams[0], [ref.JoinStep(streams[1], query.joins[0].join_type.value, holds)], project)
    want = Counter()
    for key, count in got.items():
        want[key[1:]] += count  # the rowtime is not compared (its text form is the sink's)
    return [c.name for c in compared], want


def test_the_reference_checks_the_rows_of_the_plain_window_joins_of_the_corpus():
    # kda/06, lenses/02, 07, 09, 12 when written: their rows are compared, not only their columns
    checked = [p.stem for p in PROGRAMS if f"{p.parent.name}/{p.stem}" not in RUN_REFUSES
               and plain_window_join(compile_sql(p.read_text(), p.name)) is not None]
    assert len(checked) >= 5, checked
