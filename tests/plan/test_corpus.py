"""Real programs (issue 39): `tests/corpus/<dialect>/*.sql`, each modeled on a public program of
that system (its header names the source and what was kept; the constructs are the source's, the
names are re-created, since the sources are not ours to copy). `check` and `explain` run on every
one and must give what its header records:

    -- check: ok
    -- check: NN_name.sql:LINE:COL: error: ...     (the first line of `streamjoin check`'s stderr)
    -- fair rejection: why                        (outside streamjoin's scope, or broken as published)

A program streamjoin should read and does not is recorded with its error and no fair-rejection
line, so the day it is read this test fails until the header says `ok`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pg_helpers import ensure_database
from streamjoin.errors import SqlError, Unsupported
from streamjoin.io.sources.postgres import catalog_columns
from streamjoin.lower.explain import explain_text
from streamjoin.plan import compile_sql

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
PROGRAMS = sorted(CORPUS.glob("*/*.sql"))
DIALECTS = ("kda", "sqlstream", "risingwave", "lenses")


def header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("-- ") or ":" not in line:
            break
        key, _, value = line[3:].partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def checked(path: Path) -> str:
    """What `streamjoin check` says of the file: 'ok', or its error's first line."""
    try:
        script = compile_sql(path.read_text(), path.name, catalog=catalog_columns)  # as `streamjoin check` reads it
    except (SqlError, Unsupported) as error:
        text = str(error).splitlines()[0]
        return text if isinstance(error, SqlError) else f"{path.name}: error: {text}"
    explain_text(script)  # explain reads every accepted program too
    return "ok"


def test_the_corpus_holds_at_least_fifty_programs_of_every_dialect():
    by_dialect = Counter(p.parent.name for p in PROGRAMS)
    assert sum(by_dialect.values()) >= 50 and all(by_dialect[d] >= 10 for d in DIALECTS), by_dialect
    for path in PROGRAMS:
        fields = header(path)
        assert fields.get("source") and fields.get("modeled on") and fields.get("dialect") == path.parent.name, path


def _case(path: Path):
    marks = [pytest.mark.postgres] if header(path).get("database") else []
    return pytest.param(path, id=f"{path.parent.name}/{path.stem}", marks=marks)


@pytest.mark.parametrize("path", [_case(p) for p in PROGRAMS])
def test_a_real_program_checks_as_its_header_records(path):
    database = header(path).get("database")
    if database:
        ensure_database(database.split()[0])
    assert checked(path) == header(path)["check"]


def test_the_corpus_counts_in_the_dialect_docs_are_the_corpus_headers():
    import re

    counts = Counter("fair" if "fair rejection" in header(p) else ("ok" if header(p)["check"] == "ok" else "gap")
                     for p in PROGRAMS)
    docs = (CORPUS.parents[1] / "docs" / "dialects" / "README.md").read_text()
    said = re.search(r"Today: (\d+) accepted, (\d+) fair rejections, (\d+) gaps?", docs).groups()
    assert tuple(map(int, said)) == (counts["ok"], counts["fair"], counts["gap"]), counts
