"""An ASOF join with `right.rowtime <= / < left.rowtime` runs on the column-wise engine
(operator.asof_columns) by default: the same rows, values and types as the row engine
(STREAMJOIN_OPERATOR_COLUMNAR=0), NULL keys and every plain column type included, and it
resumes from a checkpoint the row engine wrote."""

from __future__ import annotations

import json
import random

from runtime_helpers import resume_with_other_settings, run_until_idle, ts, write_jsonl
from streamjoin.lower.explain import explain_text
from streamjoin.runtime.pipeline import Pipeline
from streamjoin.settings import Settings

ROWS = Settings(operator_columnar=False, join_operator="custom")  # (a bounded run would take the batch ASOF join)
COLUMNS = Settings(operator_columnar=True, join_operator="custom")


def ddl(left, right, lateness: str = "1 MINUTE") -> str:
    return (f"CREATE STREAM l (id INT, k VARCHAR(4), n BIGINT, x DOUBLE, ok BOOLEAN, seen TIMESTAMP) "
            f"WITH (connector = 'files', format = 'json', path = '{left}', lateness = '{lateness}');\n"
            f"CREATE STREAM r (id INT, k VARCHAR(4), n BIGINT, x DOUBLE, ok BOOLEAN, seen TIMESTAMP) "
            f"WITH (connector = 'files', format = 'json', path = '{right}', lateness = '{lateness}');\n")


QUERY = ("SELECT STREAM ROWTIME, l.id AS lid, r.id AS rid, l.k AS k, r.n AS rn, r.x AS rx, r.ok AS rok, r.seen AS rseen, "
         "l.seen AS lseen FROM l ASOF LEFT JOIN r ON l.k = r.k AND l.n = r.n AND r.ROWTIME {op} l.ROWTIME;")


def rows(rng: random.Random, n: int, first_id: int = 0) -> list[dict]:
    out = []
    for i in range(n):
        out.append({"id": first_id + i, "k": rng.choice(["a", "b", None]), "n": rng.choice([1, 2**40, None]),
                    "x": rng.choice([0.5, -1.25, None]), "ok": rng.choice([True, False, None]),
                    "seen": rng.choice([ts(rng.randrange(0, 5000)), None]), "rowtime": ts(rng.randrange(0, 20) * 500)})
    return out


def canonical(result: list[dict]) -> list[tuple]:
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items())) for r in result)


def test_the_column_engine_writes_what_the_row_engine_writes_for_every_plain_type(spark, tmp_path):
    rng = random.Random("asof-columns-types")
    write_jsonl(tmp_path / "l" / "a.json", rows(rng, 80))
    write_jsonl(tmp_path / "r" / "a.json", rows(rng, 80))
    for op in ("<=", "<"):
        sql = ddl(tmp_path / "l", tmp_path / "r") + QUERY.format(op=op)
        by_rows, _ = run_until_idle(spark, sql, tmp_path / f"rows{op}", settings=ROWS)
        by_columns, status = run_until_idle(spark, sql, tmp_path / f"columns{op}", settings=COLUMNS)
        assert len(by_columns) == 80 and status["late_rows"] == 0
        assert canonical(by_columns) == canonical(by_rows)
        assert any(r["rid"] is not None for r in by_columns) and any(r["rid"] is None for r in by_columns)


def test_explain_names_the_column_engine_only_where_it_runs(tmp_path):
    sql = ddl(tmp_path / "l", tmp_path / "r")
    preceding = explain_text(Pipeline.from_sql(sql + QUERY.format(op="<="), "q.sql", COLUMNS).script)
    following = explain_text(Pipeline.from_sql(sql + QUERY.format(op=">="), "q.sql", COLUMNS).script)
    assert "rows: by column" in preceding
    assert "rows: by column" not in following


def restart_parts(rng: random.Random) -> tuple[tuple[list, list], tuple[list, list]]:
    """40 rows per input before a restart and 40 after, the later ones later in rowtime; each part
    in rowtime order (with a short lateness the first part joins most rows)."""
    first, later = (rows(rng, 40), rows(rng, 40)), (rows(rng, 40, first_id=100), rows(rng, 40, first_id=100))
    for row in later[0] + later[1]:
        row["rowtime"] = ts(20_000 + rng.randrange(0, 20) * 500)
    for part in (*first, *later):
        part.sort(key=lambda row: row["rowtime"])
    return first, later


def test_a_query_the_row_engine_checkpointed_resumes_on_the_column_engine(spark, tmp_path):
    first, later = restart_parts(random.Random("asof-columns-restart"))
    sql = ddl(tmp_path / "l", tmp_path / "r", "1 SECOND") + QUERY.format(op="<=")
    before, resumed, whole = resume_with_other_settings(spark, sql, tmp_path, first, later, ROWS, COLUMNS)
    assert 0 < before["rows_emitted"] < 40  # rows joined before the restart, rows still waiting
    assert len(resumed) == 80
    assert canonical(resumed) == canonical(whole)


def test_a_column_only_the_where_clause_reads_still_reaches_the_column_engine(spark, tmp_path):
    rng = random.Random("asof-columns-where")
    write_jsonl(tmp_path / "l" / "a.json", rows(rng, 60))
    write_jsonl(tmp_path / "r" / "a.json", rows(rng, 60))
    sql = ddl(tmp_path / "l", tmp_path / "r") + (
        "SELECT STREAM ROWTIME, l.id AS lid, r.id AS rid FROM l ASOF LEFT JOIN r ON l.k = r.k AND r.ROWTIME <= l.ROWTIME "
        "WHERE r.ok IS NOT TRUE AND l.x IS NOT NULL;")
    by_rows, _ = run_until_idle(spark, sql, tmp_path / "rows", settings=ROWS)
    by_columns, _ = run_until_idle(spark, sql, tmp_path / "columns", settings=COLUMNS)
    assert 0 < len(by_columns) < 60
    assert canonical(by_columns) == canonical(by_rows)


def test_a_query_the_column_engine_checkpointed_is_refused_on_the_row_engine_or_other_groups_naming_both(spark, tmp_path):
    import pytest
    from runtime_helpers import run_in_two_parts
    from streamjoin.errors import CheckpointMismatch

    first, later = restart_parts(random.Random("asof-columns-refused"))
    sql = ddl(tmp_path / "l", tmp_path / "r", "1 SECOND") + QUERY.format(op="<=")
    write_jsonl(tmp_path / "l" / "a.json", first[0])
    write_jsonl(tmp_path / "r" / "a.json", first[1])
    for n, after in enumerate((ROWS, Settings(operator_groups=8, join_operator="custom"))):
        with pytest.raises(CheckpointMismatch, match="cannot read its state. Nothing was run"):
            run_in_two_parts(spark, sql, tmp_path / f"run{n}", lambda: None, (COLUMNS, after))
        assert json.loads((tmp_path / f"run{n}" / "checkpoint" / "plan.json").read_text())["joins"][0]["by_column"] == "asof"
