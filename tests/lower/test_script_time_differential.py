"""A process-time temporal join over rows the file itself inserts, updates and deletes, against a
reference that runs the file statement by statement (RisingWave with `RW_IMPLICIT_FLUSH`): random
scripts of stream rows, table inserts (a held key overwritten), updates and deletes, the view
created at a random point, INNER and LEFT, with and without a condition beside the key, the stream
read directly or through a view that filters it (created earlier). Each stream row takes the table
as it stands when the row comes, or when the view is created if the row came before; nothing it
wrote changes afterwards (plan.rewrites.script_time)."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import read_output


def _script(rng: random.Random) -> tuple[list[str], int]:
    """(DML statements, the index before which the view is created)."""
    statements = []
    for _ in range(rng.randint(6, 14)):
        k, a = rng.randint(1, 3), rng.randint(0, 20)
        statements.append(rng.choice([
            f"insert into stream values ({k}, {a})",
            f"insert into stream values ({k}, {a}), ({rng.randint(1, 3)}, {rng.randint(0, 20)})",
            f"insert into version values ({k}, {a})",
            f"update version set a2 = {a} where id2 = {k}",
            f"delete from version where id2 = {k}",
        ]))
    return statements, rng.randint(0, len(statements))


def _reference(statements: list[str], created: int, join: str, extra: bool, skip: int | None) -> list[tuple]:
    import re

    table: dict[int, int] = {}
    waiting: list[tuple[int, int]] = []  # stream rows before the view: looked up when it is created
    out: list[tuple] = []

    def look(k: int, a: int):
        if a == skip:  # the filtering view's rows leave it out
            return
        hit = k in table and (not extra or a > table[k])
        if hit:
            out.append((k, a, k, table[k]))
        elif join == "left":
            out.append((k, a, None, None))

    for n, st in enumerate([*statements, None]):
        if n == created:
            for row in waiting:
                look(*row)
        if st is None:
            break
        if st.startswith("insert into stream"):
            for row in [tuple(map(int, v)) for v in re.findall(r"\((\d+), (\d+)\)", st)]:
                (look(*row) if n >= created else waiting.append(row))
        else:
            _change(table, st)
    return sorted(out, key=str)


def _change(table: dict[int, int], st: str) -> None:
    """An INSERT (a held key overwritten), UPDATE or DELETE of the version table."""
    import re

    if st.startswith("insert"):
        table.update({int(k): int(a) for k, a in re.findall(r"\((\d+), (\d+)\)", st)})
    elif st.startswith("update"):
        a, k = map(int, re.findall(r"= (\d+)", st))
        if k in table:
            table[k] = a
    else:
        table.pop(int(re.findall(r"= (\d+)", st)[0]), None)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_stream_row_takes_the_table_as_it_stood_when_the_row_came(spark, tmp_path, seed):
    from streamjoin.runtime.pipeline import Pipeline

    rng = random.Random(seed)
    statements, created = _script(rng)
    join, extra = rng.choice(["left", "inner"]), rng.random() < 0.5
    skip, filtered = (rng.randint(0, 20), rng.randint(0, created)) if rng.random() < 0.5 else (None, None)
    view = (f"create materialized view v as select id1, a1, id2, a2 from {'s' if filtered is not None else 'stream'} {join} "
            f"join version FOR SYSTEM_TIME AS OF PROCTIME() on id1 = id2{' and a1 > a2' if extra else ''}")
    lines = [s + ";" for s in statements]
    lines.insert(created, view + ";")
    if filtered is not None:
        lines.insert(filtered, f"create materialized view s as select id1, a1 from stream where a1 <> {skip};")
    program = "\n".join(["create table stream(id1 int, a1 int) APPEND ONLY;",
                         "create table version(id2 int, a2 int, primary key (id2));", *lines])
    pipeline = Pipeline.from_sql(program, f"seed {seed}", dialect="risingwave")
    pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    got = sorted(((r["id1"], r["a1"], r["id2"], r["a2"]) for r in read_output(tmp_path / "out")), key=str)
    assert got == _reference(statements, created, join, extra, skip), f"seed {seed}:\n{program}"
