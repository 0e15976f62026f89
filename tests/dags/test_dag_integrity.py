"""Every DAG file in dags/ (found when the tests are collected) parses cleanly and follows the
conventions (../shared/STYLE.md): one DAG named after the file, tags, retries, no catchup, docs,
and no heavy import at module level. Each file is parsed in a fresh process (`probe_dag_file`)."""

import functools
from pathlib import Path

import pytest
from airflow_helpers import DAGS, probe_dag_file

pytestmark = [pytest.mark.airflow]  # imports the DAG files with Airflow

DAG_FILES = sorted(p for p in DAGS.glob("*.py") if not p.name.startswith("_"))


@functools.cache
def probe(path: Path) -> dict:
    return probe_dag_file(path)


def the_dag(path: Path) -> dict:
    result = probe(path)
    assert not result["import_errors"] and result["import_error"] is None, result
    (dag,) = result["dags"]
    return dag


def each_dag_file(test):
    return pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in DAG_FILES])(test)


def test_there_are_dag_files_to_check():
    assert DAG_FILES, f"no DAG files in {DAGS}"


@each_dag_file
def test_the_dag_file_imports_without_errors(path):
    result = probe(path)
    assert result["import_error"] is None
    assert result["import_errors"] == {}


@each_dag_file
def test_the_dag_file_defines_exactly_one_dag_named_after_the_file(path):
    assert [d["dag_id"] for d in probe(path)["dags"]] == [path.stem]


@each_dag_file
def test_the_dag_has_tags_retries_docs_and_no_catchup(path):
    dag = the_dag(path)
    assert dag["tags"], "tags are empty"
    assert isinstance(dag["retries"], int) and dag["retries"] >= 1, f"default_args retries: {dag['retries']}"
    assert dag["catchup"] is False
    assert dag["doc_md"] and dag["doc_md"].strip()


@each_dag_file
def test_the_dag_file_imports_nothing_heavy_at_module_level(path):
    result = probe(path)
    assert result["heavy_added"] == [], f"imported at module level: {result['heavy_added']} (import them inside the tasks)"


@each_dag_file
def test_a_param_whose_help_says_it_may_be_empty_is_optional_in_the_trigger_form(path):
    # Airflow's trigger form requires every field whose JSON schema type does not allow null
    for name, param in the_dag(path)["params"].items():
        schema = param["schema"]
        if "empty" in param["description"].lower():
            kinds = schema.get("type")
            assert "null" in (kinds if isinstance(kinds, list) else [kinds]), f"param {name}: its type must allow null"
            assert param["default"] in (None, ""), f"param {name}: default {param['default']!r}"
