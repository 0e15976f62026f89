"""Flink's own streaming semi / anti join tests (flink-table-planner SemiAntiJoinStreamITCase,
apache/flink@1a0227f8): unbounded sources, grouped views whose rows change (a retraction) on
either side, correlations by `=`, `<` and `>`, NOT IN without an equality. Here each source is a
RisingWave source on files read in a bounded run (`--until-idle`) and each view a view; the
output, a changelog, folds to the rows Flink's retract sink holds at the end."""

from __future__ import annotations

import pytest
from runtime_helpers import read_output, write_jsonl

DATA = [(1, 1, 0, "Hallo", 1), (2, 2, 1, "Hallo Welt", 2), (2, 3, 2, "Hallo Welt wie", 1),
        (3, 4, 3, "Hallo Welt wie gehts?", 2), (3, 5, 4, "ABC", 2), (3, 6, 5, "BCD", 3)]
DATA2 = [(1, 1, "Hi"), (2, 2, "Hello"), (3, 2, "Hello world")]
LEFT = [(1, "a"), (2, "b"), (10, "c"), (6, "d"), (8, "e")]
RIGHT = [(0, "a"), (1, "a"), (1, "b"), (1, "b"), (1, "c"), (2, "c"), (3, "c"), (4, "c"), (1, "d"), (2, "d"),
         (3, "d"), (4, "e"), (4, "e")]
TWO_SIDES = [(0, "a"), (1, "a"), (1, "b"), (1, "b"), (1, "c"), (2, "c"), (3, "c"), (4, "c"), (1, "d"), (2, "d"),
             (3, "d"), (3, "e"), (5, "e")]
ANTI_LEFT = [(0, "a"), (5, "f"), (-2, "a"), (1, "b"), (1, "b"), (1, "c"), (2, "c"), (3, "c"), (1, "f"), (4, "c"),
             (1, "d"), (2, "d"), (3, "d"), (4, "e"), (3, "a"), (3, "e"), (2, "f")]
ANTI_RIGHT = [(0, "a"), (1, "a"), (1, "b"), (1, "b"), (1, "c"), (2, "c"), (3, "c"), (4, "c"), (1, "d"), (2, "d"),
              (3, "d"), (4, "e"), (3, "e")]
PAIRS = [(1, 1), (1, 1), (2, 2), (2, 2), (3, 3), (3, 3), (4, 4), (4, 4), (5, 5), (5, 5)]

# test -> ({source: (columns, rows)}, views, query, Flink's expected rows)
CASES = {
    "testGenericSemiJoin": (
        {"ds1": ("a INT, b BIGINT, c VARCHAR", DATA2), "ds2": ("d INT, e BIGINT, f INT, g VARCHAR, h BIGINT", DATA)},
        "", "SELECT a, b, c FROM ds1 WHERE a IN (SELECT d FROM ds2 WHERE d < 3)", ["1,1,Hi", "2,2,Hello"]),
    "testSemiJoinWithOneSideRetraction": (
        {"ds1": ("a INT, b VARCHAR", LEFT), "ds2": ("c INT, d VARCHAR", RIGHT)},
        "", "SELECT a FROM ds1 WHERE a IN (SELECT SUM(c) FROM ds2 GROUP BY d)", ["1", "2", "10", "6", "8"]),
    "testSemiJoinWithRetractTwoSidesRetraction": (
        {"ds1": ("a INT, b VARCHAR", TWO_SIDES), "ds2": ("c INT, d VARCHAR", TWO_SIDES)},
        "CREATE VIEW ds3 AS SELECT SUM(a) AS a FROM ds1 GROUP BY b;\n",
        "SELECT a FROM ds3 WHERE a IN (SELECT SUM(c) FROM ds2 GROUP BY d)", ["1", "2", "10", "6", "8"]),
    "testGenericAntiJoin": (
        {"ds1": ("a INT, b BIGINT, c INT, d VARCHAR, e BIGINT", DATA), "ds2": ("f INT, g BIGINT, h VARCHAR", DATA2)},
        "", "SELECT c FROM ds1 WHERE NOT EXISTS (SELECT * FROM ds2 WHERE b = g)", ["2", "3", "4", "5"]),
    "testAntiJoinWithOneSideRetraction": (
        {"ds1": ("a INT, b VARCHAR", [*LEFT, (11, "f")]), "ds2": ("c INT, d VARCHAR", RIGHT)},
        "CREATE VIEW ds3 AS SELECT SUM(c) AS c FROM ds2 GROUP BY d;\n",
        "SELECT * FROM ds1 WHERE NOT EXISTS (SELECT c FROM ds3 WHERE a = c)", ["11,f"]),
    "testAntiJoinWithTwoSidesRetraction": (
        {"ds1": ("a INT, b VARCHAR", ANTI_LEFT), "ds2": ("c INT, d VARCHAR", ANTI_RIGHT)},
        "CREATE VIEW ds3 AS SELECT SUM(c) AS c FROM ds2 GROUP BY d;\n"
        "CREATE VIEW ds4 AS SELECT SUM(a) AS a, b FROM ds1 GROUP BY b;\n",
        "SELECT * FROM ds4 WHERE NOT EXISTS (SELECT c FROM ds3 WHERE a = c)", ["8,f"]),
    "testStreamNotInWithoutEqual": (
        {"ds1": ("pk INT, a INT", PAIRS)}, "", "SELECT pk FROM ds1 WHERE pk NOT IN (SELECT pk FROM ds1 WHERE pk > 3)",
        ["1", "1", "2", "2", "3", "3"]),
    "testStreamExistsWithoutEqual": (
        {"scott_dept": ("deptno INT, dname VARCHAR, loc VARCHAR", [(10, "ACCOUNTING", "NEW YORK"), (20, "RESEARCH", "DALLAS"),
                                                                  (30, "SALES", "CHICAGO"), (40, "OPERATIONS", "BOSTON")]),
         "scott_emp": ("empno INT, ename VARCHAR, deptno INT", [(7369, "SMITH", 20), (7499, "ALLEN", 30), (7566, "JONES", 20),
                                                                (7654, "MARTIN", 30)])},
        "", "SELECT * FROM scott_dept AS d WHERE EXISTS (SELECT 1 FROM scott_emp WHERE empno > d.deptno) "
            "AND EXISTS (SELECT 0 FROM scott_emp WHERE deptno = d.deptno AND ename = 'SMITH')", ["20,RESEARCH,DALLAS"]),
    "testStreamNotExistsWithoutEqual": (
        {"ds1": ("pk INT, a INT", PAIRS), "ds2": ("pk INT, a INT", [(5, 5), (6, 6), (7, 7), (8, 8), (9, 9), (10, 10)])},
        "", "SELECT pk FROM ds1 WHERE NOT EXISTS (SELECT 1 FROM ds2 WHERE ds2.pk < ds1.pk)",
        ["1", "1", "2", "2", "3", "3", "4", "4", "5", "5"]),
}
QUICK = ("testAntiJoinWithTwoSidesRetraction",)


@pytest.mark.parametrize("name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.long) for n in CASES])
def test_flinks_streaming_semi_and_anti_join_cases_fold_to_its_rows(spark, tmp_path, name):
    from streamjoin.runtime.pipeline import Pipeline

    sources, views, query, expected = CASES[name]
    program = ""
    for source, (columns, rows) in sources.items():
        names = [c.split()[0] for c in columns.split(", ")]
        write_jsonl(tmp_path / source / "rows.json", [dict(zip(names, r, strict=True)) for r in rows])
        program += (f"CREATE SOURCE {source} ({columns}) WITH (connector = 'files', path = '{tmp_path / source}') "
                    "FORMAT PLAIN ENCODE JSON;\n")
    program += views + f"CREATE MATERIALIZED VIEW q AS {query};\n"
    pipeline = Pipeline.from_sql(program, f"{name}.sql", dialect="risingwave")
    statuses = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert all(s["state"] == "finished" for s in statuses.values()), statuses
    columns = [c.name for c in pipeline.query.output]
    content: dict = {}
    for r in read_output(tmp_path / "out"):
        key = ",".join(str(r.get(c)) for c in columns)
        content[key] = content.get(key, 0) + (-1 if r.get("op") == "-D" else 1)
        assert content[key] >= 0, f"-D of {key}, which is not in the view"
    assert sorted(k for k, n in content.items() for _ in range(n)) == sorted(expected), program
