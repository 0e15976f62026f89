"""Hostile SQL (issue 20, item 4): any text either compiles or is rejected with a positioned
error (`FILE:LINE:COL`), never a traceback or a hang. The texts are the seed queries with tokens
deleted, repeated, swapped and replaced (hypothesis)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamjoin.errors import SqlError, SqlErrors, Unsupported
from streamjoin.plan import compile_sql

SEEDS = [p.read_text() for p in sorted((Path(__file__).parents[1] / "fixtures" / "seeds").glob("*.sql"))]
TOKEN = re.compile(r"\s+|'[^']*'|\"[^\"]*\"|--[^\n]*|\w+|.", re.S)
VOCABULARY = [
    "SELECT", "STREAM", "FROM", "JOIN", "LEFT", "OUTER", "ON", "OVER", "(", ")", ",", ";", "'", '"', "RANGE", "ROWS",
    "INTERVAL", "'1'", "SECOND", "PRECEDING", "FOLLOWING", "WINDOW", "AS", "WITH", "=", "AND", "OR", "NOT", "NULL",
    "GROUP", "BY", "FLOOR", "ROWTIME", "TO", "HOUR", "CREATE", "TABLE", "VIEW", "0", "-1", "1e308",
    "99999999999999999999", "*", ".", "x", "CAST", "TIMESTAMP", "BETWEEN", "ASOF", "EMIT", "CHANGES", "FINAL",
    "INSERT", "INTO", "PUMP", "UNION", "ALL", "CASE", "WHEN", "THEN", "END", "MATCH_RECOGNIZE", "PARTITION", "ORDER",
    "LIMIT", "HAVING", "DISTINCT", "'é'", "\x00", "[", "]", "{", "}", "$", "?", ":", "::", " ",
]
EDIT = st.tuples(st.sampled_from(["delete", "repeat", "swap", "replace"]), st.integers(0, 10**6), st.sampled_from(VOCABULARY))


def mutate(text: str, edits) -> str:
    tokens = TOKEN.findall(text)
    for kind, at, word in edits:
        i = at % len(tokens)
        if kind == "delete" and len(tokens) > 1:
            del tokens[i]
        elif kind == "repeat":
            tokens.insert(i, tokens[i])
        elif kind == "swap" and i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        else:
            tokens[i] = word
    return "".join(tokens)


def compiles_or_is_rejected_with_a_position(text: str) -> None:
    try:
        compile_sql(text, "q.sql", ())
    except SqlError as error:
        assert str(error).startswith("q.sql:") and error.line >= 1 and error.col >= 1
    except SqlErrors as errors:
        assert all(e.line >= 1 and e.col >= 1 for e in errors.errors)
    except Unsupported:
        pass  # a well-formed query we do not run: its message names the relation or option


@settings(max_examples=400, deadline=10_000, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), edits=st.lists(EDIT, min_size=1, max_size=4))
def test_a_mutated_seed_query_compiles_or_is_rejected_with_a_position_never_a_crash(seed, edits):
    compiles_or_is_rejected_with_a_position(mutate(seed, edits))


@pytest.mark.parametrize("text", [
    "CREATE STREAM orders (k INTEGER);\nINSERT INTO \nSELECT STREAM * FROM orders;\n",  # found by the fuzzer
    "SET a.b=\nWITH v AS (SELECT TABLE * FROM s);\n",  # found by the fuzzer: a SET whose value is the next statement
    "\x00", "SELECT", "'", "SELECT 'abc", 'SELECT "a', "CREATE STREAM s (",
    "SELECT STREAM * FROM s OVER (RANGE INTERVAL '1e308' SECOND PRECEDING)",
])
def test_texts_that_once_crashed_the_front_end_are_rejected_with_a_position(text):
    with pytest.raises(SqlError) as rejected:
        compile_sql(text, "q.sql", ())
    message = str(rejected.value)
    assert message.startswith("q.sql:") and rejected.value.line >= 1 and rejected.value.col >= 1, message
    assert not re.search(r"index out of range|Traceback|<class|sqlglot\.", message), message  # said in SQL words


@pytest.mark.parametrize("text", ["", ";;;", "-- a comment only\n"])
def test_a_file_with_no_statement_compiles_to_nothing(text):
    script = compile_sql(text, "q.sql", ())
    assert script.queries == () and script.relations == ()
