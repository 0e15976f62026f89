"""docs/architecture.md's module list says what the package holds (issue 44): every module of
`spark_apps/streamjoin` is named in it, and every module it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "spark_apps" / "streamjoin"


def module_block() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    return text.split("```")[1]


def test_every_module_of_the_package_is_named_in_the_architecture_docs_module_list():
    block = module_block()
    modules = [p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" and "data_docs_assets" not in p.parts]
    missing = [str(p.relative_to(PACKAGE)) for p in modules if not re.search(rf"\b{re.escape(p.stem)}\b", block)]
    assert not missing, f"add them to docs/architecture.md: {missing}"


def test_every_module_file_the_architecture_doc_names_exists():
    named = set(re.findall(r"(?<!tests/)\b([a-z_]+)\.py\b", module_block()))  # not tests/...
    stems = {p.stem for p in PACKAGE.rglob("*.py")}
    assert named <= stems, sorted(named - stems)


def test_the_two_stream_throughput_in_status_is_the_range_of_the_benchmark_tables_1x_rows():
    import re as regex

    table = (ROOT / "docs" / "benchmarks.md").read_text()
    ratios = [float(m.group(1)) for m in regex.finditer(
        r"^\| (?:inner|full)-(?:sparse|dense) \| 1x \| streamjoin \| [^|]+\| [^|]+\| ([\d.]+)x \|", table, regex.M)]
    status = (ROOT / "docs" / "status.md").read_text()
    low, high = regex.search(r"two-stream throughput ([\d.]+)-([\d.]+)x Flink", status).groups()
    assert len(ratios) == 4 and (float(low), float(high)) == (min(ratios), max(ratios)), ratios


def _docs_text() -> str:
    return "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])


def test_every_test_file_and_test_function_the_docs_name_exists():
    text = _docs_text()
    files = set(re.findall(r"\btests/[\w/]+\.py\b", text))
    missing_files = sorted(f for f in files if not (ROOT / f).exists())
    assert not missing_files, missing_files
    # test modules named bare (`test_regular_joins`) and test functions named in full
    sources = {p.stem: p.read_text() for p in (ROOT / "tests").rglob("test_*.py")}
    every = "\n".join(sources.values())
    named = set(re.findall(r"\btest_[a-z0-9_]+\b", text))
    missing = sorted(n for n in named if n not in sources and f"def {n}(" not in every)
    assert not missing, f"docs name tests that do not exist: {missing}"
