"""SQL text -> the checked, rewritten plan every later layer uses.

>>> script = compile_sql("CREATE STREAM s (k INT) WITH (connector = 'files', path = '/in'); SELECT STREAM k FROM s;")
>>> script.final.inputs[0].relation
's'
"""

from __future__ import annotations

from dataclasses import replace

from streamjoin.dialect.profiles import DEFAULT, evidence, profile
from streamjoin.errors import SqlError
from streamjoin.plan.analyzer.statements import analyze
from streamjoin.plan.catalog import CATALOG, TOPICS
from streamjoin.plan.model import Script
from streamjoin.plan.rewrites import REWRITES


def compile_sql(sql: str, filename: str = "<sql>", declared: tuple[tuple[str, str], ...] = (),
                dialect: str | None = None, chosen_by: str = "--dialect", catalog=None, topics=None) -> Script:
    """Analyse a SQL file (SqlError with its position if rejected), then apply the rewrites.
    `declared`: inputs declared outside the file (`streamjoin.plan.inputs.declarations`);
    `dialect`: the profile to read it with (`dialect.profiles`; `chosen_by` says who chose it),
    else detected (`choose`); `catalog`: how a PostgreSQL table declared without columns gets them
    from its database ((url, table) -> [(name, type)], `io.sources.postgres.catalog_columns`; None: it is
    refused); `topics`: how a Lenses program's undeclared topic gets its columns (topic -> [(name,
    type)], `io.sources.kafka_catalog.topic_columns`; None: it is refused)."""
    token, topics_token = CATALOG.set(catalog), TOPICS.set(topics)
    try:
        script = choose(sql, filename, declared) if dialect is None else replace(
            analyze(sql, filename, declared, profile(dialect)), dialect_reason=f"chosen by {chosen_by}")
    finally:
        CATALOG.reset(token)
        TOPICS.reset(topics_token)
    for rewrite in REWRITES:
        script = rewrite(script)
    return script


def choose(sql: str, filename: str, declared: tuple[tuple[str, str], ...]) -> Script:
    """The file read with the default profile, unless it uses constructs only one dialect has and
    that dialect reads it the same way, or the default profile rejects it: then with that
    dialect's profile. A program the default profile accepts keeps its meaning; where the other
    reading would differ, a note says so (check warns)."""
    found = evidence(sql)
    try:
        script = analyze(sql, filename, declared, DEFAULT)
    except SqlError:
        if found is None:
            raise
        chosen, what = found
        return replace(analyze(sql, filename, declared, chosen), dialect_reason=f"detected: {what}")
    if found is None:
        return script
    chosen, what = found
    try:
        other = analyze(sql, filename, declared, chosen)
    except SqlError as error:
        other = error
    if isinstance(other, Script) and _same(other, script):  # the same plan: name the dialect it is written in
        return replace(other, dialect_reason=f"detected: {what}")
    warning = (f"warning: this file uses {what} ({chosen.title}), but was read with the default profile, where "
               f"{_difference(chosen)}; --dialect {chosen.name} reads it as {chosen.title} does")
    return replace(script, notes=(*script.notes, warning))


def _same(a: Script, b: Script) -> bool:
    """The same plan and the same output column names (other names may differ in case and quoting)."""
    import json

    plain = {"dialect": "", "dialect_reason": "", "notes": ()}
    names = [[[c.name for c in q.output] for q in s.queries] for s in (a, b)]
    text = [json.dumps(replace(s, **plain).to_dict(), sort_keys=True).lower().replace("\\\"", "") for s in (a, b)]
    return names[0] == names[1] and text[0] == text[1]


def _difference(chosen) -> str:
    if chosen.fold != DEFAULT.fold:
        return "unquoted names fold to lower case (output columns too), not to upper case"
    if chosen.windowless != DEFAULT.windowless:
        return "a join of two streams without a time bound is the CURRENT ROW window join, not a regular join"
    return "it means something else"
