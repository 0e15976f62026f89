"""RisingWave's own subquery tests (issue 67), as its files say: `tests/peers/risingwave/subquery/`
holds e2e_test/batch/subquery's files, copied unedited (a header names the commit). Each `query`
record reads the file's tables as they stand at that point; here it is a materialized view over
them (`CREATE MATERIALIZED VIEW q AS <the query>`), run by `streamjoin run --dialect risingwave`,
whose rows must be the record's (as multisets: a view has no order). A record `run` refuses is
listed in REFUSED with the words of the refusal, which says what to write instead; a record that
expects an error is checked to fail so."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from runtime_helpers import read_output
from streamjoin.errors import SqlError
from test_risingwave_peer_slt import _apply, _text
from test_risingwave_tpch_nexmark_views import records as sqllogictest

FILES = Path(__file__).resolve().parents[1] / "peers" / "risingwave" / "subquery"


@dataclass(frozen=True)
class Record:
    file: str
    line: int
    query: str
    program: str  # the file's live statements, then the view
    expected: tuple[str, ...] | None  # None: the record expects an error
    error: str = ""

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def records(path: Path) -> list[Record]:
    """The file's query records, each with the program of the statements before it."""
    live: list[tuple[str, str, str]] = []
    found = []
    for head, sql, rows, line in sqllogictest(path):
        if head.startswith("query"):
            program = "".join(s + ";\n" for _, _, s in live) + f"CREATE MATERIALIZED VIEW q AS {sql};\n"
            error = head.split("error", 1)[1].strip() if head.startswith("query error") else ""
            found.append(Record(path.name, line, sql, program, None if error else tuple(sorted(rows)), error))
        elif head.startswith("statement ok"):
            _apply(live, sql)
    return found


RECORDS = [r for p in sorted(FILES.glob("*.slt.part")) for r in records(p)]

# record -> the words of `run`'s refusal (each names what to write instead; docs/semantics-decisions.md)
REFUSED = {
    # a row inserted with the clock's value (NOW()): a table's seed rows are literals
    "scalar_subquery.slt.part:31": "must be a literal",
}


def test_the_peer_files_hold_the_subquery_forms():
    assert len(RECORDS) >= 25, len(RECORDS)
    text = " ".join(r.query.lower() for r in RECORDS)
    for form in ("exists(", "not exists(", " in (", "(select count(*)"):
        assert form in text, form
    assert set(REFUSED) <= {r.id for r in RECORDS}, sorted(set(REFUSED) - {r.id for r in RECORDS})


@pytest.mark.parametrize("record", [r for r in RECORDS if r.id in REFUSED], ids=lambda r: r.id)
def test_a_subquery_record_streamjoin_refuses_says_why_and_what_to_write(record):
    from streamjoin.plan import compile_sql

    with pytest.raises(SqlError, match=REFUSED[record.id]) as caught:
        compile_sql(record.program, record.id, dialect="risingwave")
    assert caught.value.hint, record.id


def _quick(record: Record):
    """`make test` runs subquery.slt.part's records; `make test-long` every file's."""
    return record if record.file in ("subquery.slt.part", "scalar_subquery.slt.part") else pytest.param(
        record, marks=pytest.mark.long)


@pytest.mark.parametrize("record", [_quick(r) for r in RECORDS if r.id not in REFUSED], ids=lambda r: r.id)
def test_a_subquery_records_rows_are_risingwaves(spark, tmp_path, record):
    from streamjoin.runtime.pipeline import Pipeline

    pipeline = Pipeline.from_sql(record.program, record.id, dialect="risingwave")
    if record.expected is None:  # RisingWave's error: the run stops, naming it, and writes nothing
        with pytest.raises(Exception, match="(?i)" + record.error.split("more than")[0] + "produced more than one row"):
            pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
        assert not list((tmp_path / "out").glob("part-*"))
        return
    statuses = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert all(s["state"] == "finished" for s in statuses.values()), statuses
    names = [c.name for c in pipeline.query.output]
    got = tuple(sorted(" ".join(_text(r.get(n)) for n in names) for r in read_output(tmp_path / "out")))
    assert got == record.expected, f"{record.id}:\n{record.program}"
