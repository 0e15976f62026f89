"""Differential tests of Lenses' changelog join (issue 44): a stream joined with a `SELECT TABLE`
view over a stream that changes by key (seed 004's `customersTable`), on random rows: keys
repeated, updated, arriving before, at and after the stream rows that want them, never arriving,
NULL on the stream's side; INNER, `stream LEFT JOIN view` and `view RIGHT JOIN stream`; under
EMIT FINAL, EAGER and CHANGES. Each run is compared with a plain-Python reading of the decision
in docs/semantics-decisions.md ("`SELECT TABLE` view over a stream"), written here, independent
of the code under test:

- the table is the latest row per key of its stream; a stream row meets it as of its instant,
  the table rows of that instant applied first;
- a stream row that finds no row waits until end of input, and the first table row that arrives
  for it later matches it, with that row's rowtime;
- FINAL writes the NULL-extended row only if none ever came; EAGER writes it at once, then the
  match; CHANGES writes it at once and withdraws it (-D) when the match comes.

Rows are drawn from a seed as tests/lower/test_shape_differential.py draws shapes: half from a
fixed base seed, half from today's date (STREAMJOIN_SHAPE_SEED overrides it); a failure names it."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import pytest
from runtime_helpers import ms, run_until_idle, ts, write_jsonl
from test_shape_differential import DAILY_SEED

BASE_SEED = 4404
FORMS = ("INNER", "LEFT", "VIEW_RIGHT")
EMITS = ("FINAL", "EAGER", "CHANGES")


@dataclass(frozen=True)
class Rows:
    table: tuple  # (ms, key, name), in arrival order (rowtime order)
    stream: tuple  # (ms, item, key), in arrival order
    form: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.form}_table{len(self.table)}_stream{len(self.stream)}"


def draw(seed: int) -> Rows:
    rng = random.Random(seed)
    instants = [rng.randrange(0, 8) * 1000 for _ in range(12)]  # few instants: ties across and within inputs
    table = sorted(((rng.choice(instants), rng.randint(1, 4), f"name-{n}") for n in range(rng.randint(0, 7))),
                   key=lambda r: r[0])
    stream = sorted(((rng.choice(instants), f"item-{n}", rng.choice((1, 2, 3, 4, 5, None))) for n in range(rng.randint(1, 9))),
                    key=lambda r: r[0])
    return Rows(tuple(table), tuple(stream), rng.choice(FORMS), seed)


def expected(rows: Rows, emit: str) -> Counter:
    """(op, name, item, rowtime ms) of every row written; FINAL and EAGER write no op ('+')."""
    outer = rows.form != "INNER"
    out: Counter = Counter()
    for at, item, key in rows.stream:
        now = [r for r in rows.table if r[0] <= at and r[1] == key] if key is not None else []
        if now:
            out[("+", now[-1][2], item, at)] += 1
            continue
        later = [r for r in rows.table if r[0] > at and r[1] == key] if key is not None else []
        if outer and (emit != "FINAL" or not later):
            out[("+", None, item, at)] += 1
        if later:
            out[("+", later[0][2], item, later[0][0])] += 1
            if outer and emit == "CHANGES":
                out[("-", None, item, at)] += 1
    return out


def sql(rows: Rows, folder, emit: str) -> str:
    join = {"INNER": "orders JOIN customersTable", "LEFT": "orders LEFT JOIN customersTable",
            "VIEW_RIGHT": "customersTable RIGHT JOIN orders"}[rows.form]
    return f"""CREATE STREAM customers (_key INTEGER, id INTEGER, name VARCHAR)
  WITH (connector = 'files', format = 'json', path = '{folder}/customers');
CREATE STREAM orders (item VARCHAR, customer_id INTEGER)
  WITH (connector = 'files', format = 'json', path = '{folder}/orders');
WITH customersTable AS (SELECT TABLE * FROM customers);
SELECT STREAM ROWTIME, customersTable.name, orders.item
FROM {join} ON customersTable.id = orders.customer_id{'' if emit == 'FINAL' else ' EMIT ' + emit};"""


def cases():
    for i, seed in enumerate([BASE_SEED * 1000 + i for i in range(4)] + [DAILY_SEED * 1000 + 70 + i for i in range(4)]):
        rows = draw(seed)
        quick = i in (0, 4)  # one base and one daily set of rows in make test, the rest in make test-long
        for emit in EMITS:
            yield pytest.param(rows, emit, id=f"{emit}-{rows.id}-{seed}", marks=() if quick else pytest.mark.long)
    # always: a key updated before its stream row, one arriving after two rows wait for it, a NULL key
    fixed = Rows(((0, 1, "a"), (1000, 1, "b"), (2000, 2, "c"), (4000, 3, "d"), (4000, 3, "e")),
                 ((1000, "x", 1), (1000, "y", 3), (2000, "z", 3), (3000, "w", None), (4000, "v", 3)), "LEFT", 0)
    yield from (pytest.param(fixed, emit, id=f"{emit}-fixed") for emit in ("EAGER", "CHANGES"))


@pytest.mark.parametrize(("rows", "emit"), list(cases()))
def test_a_stream_joined_with_a_table_view_of_a_stream_writes_what_the_documented_changelog_join_says(
        spark, tmp_path, rows, emit):
    write_jsonl(tmp_path / "customers" / "c.json",
                [{"_key": key, "id": key, "name": name, "rowtime": ts(at)} for at, key, name in rows.table])
    write_jsonl(tmp_path / "orders" / "o.json",
                [{"item": item, "customer_id": key, "rowtime": ts(at)} for at, item, key in rows.stream])
    got_rows, status = run_until_idle(spark, sql(rows, tmp_path, emit), tmp_path / "run")
    assert status["late_rows"] == 0
    got = Counter((("-" if r.get("op") == "-D" else "+"), r["name"], r["item"], ms(r["rowtime"])) for r in got_rows)
    assert got == expected(rows, emit), (
        f"seed {rows.seed} ({'daily' if rows.seed >= DAILY_SEED * 1000 else 'base'}), {emit}\n"
        f"table: {rows.table}\nstream: {rows.stream}\nSQL:\n{sql(rows, tmp_path, emit)}")
