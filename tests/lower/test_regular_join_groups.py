"""A GROUP BY without a time bucket over regular joins (issue 40): RisingWave's materialized view of
counts and sums per group of a join whose rows change. Each joined row added (+I) or withdrawn
(-D) moves its group; the groups' changelog, folded by the group key, is the SQL aggregate of the
join of the inputs as they stand, across micro-batches and a restart."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from test_regular_joins import TABLES, _run_in_three_parts, debezium_events, fold_by, joined


def sql_groups(rows: list[tuple], key, amount, kind) -> dict:
    """group -> (COUNT(*), SUM, MAX of `amount`, COUNT(DISTINCT `kind`)) of the joined rows."""
    groups = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    out = {}
    for k, members in groups.items():
        present = [amount(r) for r in members if amount(r) is not None]
        kinds = {kind(r) for r in members if kind(r) is not None}
        out[k] = (len(members), sum(present) if present else None, max(present) if present else None, len(kinds))
    return out


def fold_groups(rows: list[dict]) -> dict:
    content = fold_by(rows, ("region", "n", "total", "biggest", "kinds"))
    folded = {}
    for (region, *values), count in content.items():
        assert count == 1 and region not in folded, f"group {region} twice: {content}"
        folded[region] = tuple(values)
    return folded


@pytest.mark.parametrize(("join_type", "having"), [("LEFT", ""), pytest.param("LEFT", "HAVING COUNT(*) > 2 AND MIN(o.oid) < 10", marks=pytest.mark.long),
                                                   pytest.param("INNER", "", marks=pytest.mark.long)])
def test_groups_of_a_regular_join_with_a_table_that_changes_follow_every_change(spark, tmp_path, join_type, having):
    """(HAVING: the groups that pass it as they stand, on aggregates the output does not hold.)"""
    rng = random.Random(f"groups-{join_type}")
    customers: dict = {}
    batches, orders = [], []
    for n in range(3):
        new_orders = [{"oid": 10 * n + i, "cust": rng.choice([1, 2, 3, 4, None])} for i in range(5)]
        orders += new_orders
        batches.append({"orders": new_orders,
                        "customers": debezium_events(rng, [1, 2, 3], {"name": ["ann", "bob"], "region": [1, 2]}, 5, customers)})
    sql = TABLES.format(d=tmp_path) + f"""
    CREATE MATERIALIZED VIEW per_region AS
      SELECT c.region, COUNT(*) AS n, SUM(o.oid) AS total, MAX(o.oid) AS biggest, COUNT(DISTINCT o.cust) AS kinds
      FROM orders AS o {join_type} JOIN customers AS c ON o.cust = c.id
      GROUP BY c.region {having};
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    pairs = joined([(o,) for o in orders], list(customers.values()), lambda row, c: row[0]["cust"] == c["id"], join_type, 1)
    want = sql_groups(pairs, lambda row: row[1] and row[1]["region"], lambda row: row[0]["oid"], lambda row: row[0]["cust"])
    if having:
        want = {k: v for k, v in want.items() if v[0] > 2 and min(r[0]["oid"] for r in pairs if (r[1] and r[1]["region"]) == k) < 10}
        assert want, "a group passes HAVING"
    assert status["rejected_rows"] == 0, status
    assert fold_groups(rows) == want, rows


def test_groups_of_a_table_that_changes_read_alone_follow_its_updates_and_deletes(spark, tmp_path):
    """A CDC table's counts per group (RisingWave's most common CDC view): each update withdraws
    the old row from its group and adds the new one, a delete withdraws it; folded, the
    aggregate of the table as it stands, across micro-batches and a restart."""
    rng = random.Random("groups-of-a-table")
    customers: dict = {}
    batches = [{"customers": debezium_events(rng, [1, 2, 3, 4, 5], {"name": ["ann", "bob", "cy"], "region": [1, 2, None]}, 7, customers)}
               for _ in range(3)]
    sql = TABLES.format(d=tmp_path) + """
    CREATE MATERIALIZED VIEW per_region AS
      SELECT region, COUNT(*) AS n, MAX(name) AS last_name, COUNT(DISTINCT name) AS names FROM customers WHERE id > 1 GROUP BY region;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    content = fold_by(rows, ("region", "n", "last_name", "names"))
    groups = defaultdict(list)
    for c in customers.values():
        if c["id"] > 1:
            groups[c["region"]].append(c["name"])
    want = {(k, len(v), max(v), len(set(v))) for k, v in groups.items()}
    assert status["rejected_rows"] == 0, status
    assert set(content) == want and all(n == 1 for n in content.values()), (content, want)


def test_a_table_that_changes_read_alone_writes_its_rows_as_a_changelog(spark, tmp_path):
    """`SELECT ... FROM cdc_table WHERE ...`: each update withdraws the row it replaces (-D) and
    adds the new one when it passes WHERE; folded, the table's rows as they stand."""
    rng = random.Random("rows-of-a-table")
    customers: dict = {}
    batches = [{"customers": debezium_events(rng, [1, 2, 3, 4], {"name": ["ann", "bob"], "region": [1, 2, None]}, 6, customers)}
               for _ in range(3)]
    sql = TABLES.format(d=tmp_path) + """
    CREATE MATERIALIZED VIEW placed AS SELECT id, UPPER(name) AS name FROM customers WHERE region IS NOT NULL;
    """
    rows, status = _run_in_three_parts(spark, tmp_path, sql, batches, "risingwave")
    assert fold_by(rows, ("id", "name")) == Counter((c["id"], c["name"].upper()) for c in customers.values() if c["region"] is not None), rows
    assert status["rejected_rows"] == 0, status


class _State:
    """What applyInPandasWithState hands the function (GroupState), in memory."""

    def __init__(self):
        self.value = None

    @property
    def exists(self):
        return self.value is not None

    @property
    def get(self):
        return self.value

    def update(self, value):
        self.value = value

    def remove(self):
        self.value = None


def test_a_groups_accumulators_take_back_what_a_withdrawn_row_gave_and_a_group_left_empty_is_deleted():
    """...and a group's changes never go back in time, though its rows come out of rowtime order
    (a withdrawn row keeps the rowtime it was written at), nor after the group was deleted."""
    import pickle

    import pandas as pd
    from streamjoin.lower.running import SIGN, TIME, Running, _Measure

    measures = (_Measure("COUNT_STAR", True), _Measure("SUM", True), _Measure("MIN", True), _Measure("MAX", True),
                _Measure("COUNT_DISTINCT", True), _Measure("AVG", True))
    names = ("n", "s", "lo", "hi", "d", "mean")
    running, state = Running(measures, ("g",), names, signed=True), _State()
    rng = random.Random("signed")
    live: Counter = Counter()
    content: Counter = Counter()
    stamped = []
    for step in range(40):
        batch = []
        for _ in range(rng.randint(1, 4)):
            if +live and rng.random() < 0.45:
                v = rng.choice(sorted((+live).elements(), key=repr))
                live[v] -= 1
                batch.append((v, -1))
            else:
                v = rng.choice([1, 2, 5, None])
                live[v] += 1
                batch.append((v, 1))
        frame = pd.DataFrame({**{f"{name}_in": [v for v, _ in batch] for name in names}, SIGN: [s for _, s in batch],
                              TIME: [rng.randint(0, step)] * len(batch)})
        for out in running(("k",), [frame], state):
            stamped += out[TIME].tolist()
            for op, *row in out.drop(columns=[TIME]).itertuples(index=False):
                row = [None if v != v else v for v in row]  # pandas' NaN: Spark's NULL
                content[tuple(row)] += 1 if op == "+I" else -1
                assert content[tuple(row)] >= 0
        values = [v for v in (+live).elements() if v is not None]
        rows = sum((+live).values())
        want = {("k", rows, sum(values) if values else None, min(values, default=None), max(values, default=None),
                 len(set(values)), sum(values) / len(values) if values else None)} if rows else set()
        assert set((+content).keys()) == want, (step, content, live)
        assert pickle.loads(state.get[0])[0] == rows  # (a group left empty keeps its last rowtime)
    assert stamped == sorted(stamped) and len(set(stamped)) > 5, stamped


@pytest.mark.parametrize("source", ["orders AS o JOIN customers AS c ON o.cust = c.id", "orders AS o"])
def test_groups_into_a_sink_that_appends_are_refused_with_what_to_declare(source):
    """A running aggregate's rows change (-D, +I), over a regular join or over one stream: written
    into a sink that appends, its old rows would stay; declare the sink upsert, or force_append_only."""
    from streamjoin.errors import Unsupported
    from streamjoin.runtime.pipeline import Pipeline

    group = "c.region" if "JOIN" in source else "o.cust"
    sql = TABLES.format(d="/tmp/x") + f"""
    CREATE SINK counts WITH (connector = 'files', path = '/tmp/x/out', format = 'delta');
    INSERT INTO counts SELECT {group} AS g, COUNT(*) AS n FROM {source} GROUP BY {group};
    """
    with pytest.raises(Unsupported, match="declare it type = 'upsert'"):
        Pipeline.from_sql(sql, "rw.sql", dialect="risingwave")
    upsert = sql.replace("format = 'delta'", "format = 'delta', type = 'upsert', primary_key = 'g'")
    Pipeline.from_sql(upsert, "rw.sql", dialect="risingwave")  # accepted
