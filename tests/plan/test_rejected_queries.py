"""SEMANTICS.md §9: every rejected query fails before reading data, naming the construct,
its line and column, and what is allowed instead."""

from pathlib import Path

import pytest
from streamjoin.errors import SqlError
from streamjoin.plan import compile_sql

REJECTED = Path(__file__).parents[1] / "fixtures" / "rejected"
# a fixture's header: a sentence, then what `check` says, line by line
CASES = sorted(p for p in REJECTED.glob("*.sql") if p.read_text().startswith("-- ") and "\n-- expect: " in p.read_text())


def expected_error(text: str) -> list[str]:
    return [line[len("-- expect: "):] for line in text.splitlines() if line.startswith("-- expect: ")]


@pytest.mark.parametrize("fixture", CASES, ids=[p.stem for p in CASES])
def test_a_rejected_query_fails_before_reading_data_at_the_line_and_column_the_fixture_names(fixture):
    text = fixture.read_text()
    with pytest.raises(SqlError) as caught:
        compile_sql(text, fixture.name)
    assert str(caught.value).splitlines() == expected_error(text)


def test_every_rejection_fixture_names_its_error_position():
    assert len(CASES) >= 30
    for fixture in CASES:
        first = expected_error(fixture.read_text())[0]
        assert first.startswith(f"{fixture.name}:") and ": error: " in first, fixture.name


def test_lenses_outer_join_of_a_stream_and_a_table_is_rejected_by_semantics():
    # Seed 004's "table materialization" example joins ordersStream OUTER JOIN a SELECT TABLE view.
    # Lenses runs it; SEMANTICS.md §7 decides: preserving the table side needs a bucketed stream.
    sql = (Path(__file__).parents[1] / "fixtures" / "rejected" / "s004_table_materialization.sql").read_text()
    with pytest.raises(SqlError) as caught:
        compile_sql(sql, "s004.sql")
    assert caught.value.message.startswith("an outer join must be one-sided")


def test_error_text_is_file_line_col_then_hint():
    error = SqlError("bad thing", "q.sql", 3, 7, "do this")
    assert str(error) == "q.sql:3:7: error: bad thing\n  hint: do this"

