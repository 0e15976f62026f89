"""The documentation runs: every ```sql block of README.md and docs/ passes `streamjoin check`,
and `streamjoin --help` names every command.

A block meant as a fragment is marked ```sql fragment and skipped (none is, today)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from streamjoin.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```sql([^\n]*)\n(.*?)^```", re.S | re.M)


def sql_blocks():
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield pytest.param(match.group(1).strip(), match.group(2), id=f"{doc.relative_to(ROOT)}:{line}")


def test_the_readme_has_sql_blocks_to_check():
    readme = [p for p in sql_blocks() if p.id.startswith("README.md:")]
    assert len(readme) >= 3


@pytest.mark.parametrize(("info", "sql"), list(sql_blocks()))
def test_every_sql_block_of_the_docs_passes_check(info, sql, tmp_path, capsys):
    if info == "fragment":
        pytest.skip("marked as a fragment")
    assert info == "", f"unknown sql block marker {info!r} (use ```sql or ```sql fragment)"
    path = tmp_path / "block.sql"
    path.write_text(sql, encoding="utf-8")
    code = main(["check", str(path)])
    assert code == 0, capsys.readouterr().err


def test_a_stream_declaring_rowtime_rowtime_without_the_column_gets_the_implicit_rowtime(tmp_path, capsys):
    path = tmp_path / "implicit.sql"
    path.write_text("CREATE STREAM s (id INT) WITH (rowtime = 'rowtime');\nSELECT STREAM ROWTIME, id FROM s;\n")
    assert main(["check", str(path)]) == 0, capsys.readouterr().err


def test_a_stream_naming_an_undeclared_rowtime_column_other_than_rowtime_is_rejected(tmp_path, capsys):
    path = tmp_path / "missing.sql"
    path.write_text("CREATE STREAM s (id INT) WITH (rowtime = 'ts');\nSELECT STREAM id FROM s;\n")
    assert main(["check", str(path)]) == 2
    assert "rowtime column 'ts' is not a column of this stream" in capsys.readouterr().err


def test_help_describes_every_command_and_subcommand():
    result = subprocess.run([sys.executable, "-m", "streamjoin.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    described = [line.split()[:2] for line in result.stdout.split("positional arguments")[0].splitlines() if line.startswith("  ")]
    commands = re.search(r"\{([a-z0-9,]+)\}", result.stdout).group(1).split(",")
    for command in commands:
        assert any(words[0] == command for words in described), f"--help does not describe `{command}`"
    for nested in ("s3", "quality"):
        sub = subprocess.run([sys.executable, "-m", "streamjoin.cli", nested, "--help"], capture_output=True, text=True)
        for word in re.search(r"\{([a-z0-9,]+)\}", sub.stdout).group(1).split(","):
            assert [nested, word] in described, f"--help does not describe `{nested} {word}`"
