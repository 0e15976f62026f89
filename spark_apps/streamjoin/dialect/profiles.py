"""Dialect profiles: what differs between the systems whose programs streamjoin reads.

A profile is a small table, as a sqlglot `Dialect` is a few class attributes: how unquoted names
fold (`fold`), what a stream-stream join without a window means (`windowless`), and what a TABLE
is. The analyzer reads these facts; nothing else branches on a profile's name.

- ``default``: streamjoin's own reading (the seeds' union): names fold to lower case, a join
  without a window is s-Server's CURRENT ROW window (SEMANTICS.md §3).
- ``kda`` (Amazon Kinesis Data Analytics SQL) and ``sqlstream`` (SQLstream s-Server): unquoted
  names fold to UPPER case, so ``FROM orders_stream`` finds ``"ORDERS_STREAM"`` and
  ``"ROWTIME"`` is the rowtime; a join without a window is the CURRENT ROW window.
- ``risingwave``: names fold to lower case (PostgreSQL); a join without a time bound is a
  regular join over the whole history (docs/dialects/risingwave.md).
- ``lenses``: names fold to lower case, as in the default profile.

Names are folded once, right after parsing (`fold`): every later step sees canonical names, as
sqlglot's `normalize_identifiers` does for its optimizer. A profile is chosen by `--dialect`,
`dialect = "..."` in an app's `app.toml`, or detected from constructs that only one dialect has
(`detect`).

>>> from streamjoin.dialect import parse_script, to_sql
>>> [q] = fold(parse_script('SELECT STREAM "ROWTIME", ticker FROM orders_stream'), PROFILES["kda"])
>>> to_sql(q)
'SELECT STREAM ROWTIME, "TICKER" FROM "ORDERS_STREAM"'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from streamjoin.errors import Unsupported

CURRENT_ROW, REGULAR = "current_row", "regular"


@dataclass(frozen=True)
class Profile:
    name: str
    title: str  # the system, as its users call it
    fold: str  # unquoted names: "lower" or "upper" case
    windowless: str  # a stream-stream join without a window or time bound: CURRENT_ROW or REGULAR
    slash_comments: bool = False  # `//` starts a comment to the end of the line (Calcite's parsers: KDA, s-Server)
    # a stream that declares no time (no WATERMARK, no rowtime option or column) is ordered by
    # arrival: its rowtime is the instant streamjoin reads each row (RisingWave's sources)
    arrival_rowtime: bool = False
    # DECIMAL / NUMERIC without a precision keeps every digit (PostgreSQL's NUMERIC: RisingWave), so
    # `x::NUMERIC` is DECIMAL(38, 18), as a declared DECIMAL column is in every profile; elsewhere
    # the SQL standard's scale 0 (and Spark's DECIMAL(10, 0)) stands
    unbounded_numeric: bool = False


PROFILES = {
    p.name: p
    for p in (
        Profile("default", "streamjoin (s-Server, KDA, RisingWave and Lenses joins as SEMANTICS.md reads them)", "lower", CURRENT_ROW),
        Profile("kda", "Amazon Kinesis Data Analytics for SQL", "upper", CURRENT_ROW, slash_comments=True),
        Profile("sqlstream", "SQLstream s-Server", "upper", CURRENT_ROW, slash_comments=True),
        Profile("risingwave", "RisingWave", "lower", REGULAR, arrival_rowtime=True, unbounded_numeric=True),
        Profile("lenses", "Lenses SQL", "lower", CURRENT_ROW),
    )
}
DEFAULT = PROFILES["default"]


def profile(name: str | None) -> Profile:
    """The profile called `name` (None: the default); an unknown name says which exist."""
    if name is None:
        return DEFAULT
    found = PROFILES.get(name.strip().lower())
    if found is None:
        raise Unsupported(f"unknown dialect '{name}': use one of {', '.join(PROFILES)}")
    return found


def fold(statements: list[exp.Expression], chosen: Profile) -> list[exp.Expression]:
    """The statements with every unquoted name folded as the profile folds it, once. Lower-case
    folding is what the analyzer does by itself (`plan.scope.ident_name`); upper-case folding
    writes each unquoted name in upper case, quoted. `ROWTIME`, however spelt, stays the rowtime
    keyword. Option keys (WITH (...)) and SET names are not names of the program's data. Where
    the profile's NUMERIC is unbounded, a cast to DECIMAL / NUMERIC without a precision is to DECIMAL(38, 18)."""
    if chosen.unbounded_numeric:
        for statement in statements:
            for cast in list(statement.find_all(exp.Cast)):  # (a declared column is DECIMAL(38, 18) already: io.formats.types)
                if cast.to.this == exp.DataType.Type.DECIMAL and not cast.to.expressions:
                    cast.set("to", exp.DataType.build("DECIMAL(38, 18)"))
    if chosen.fold != "upper":
        return statements
    for statement in statements:
        for node in list(statement.find_all(exp.Identifier)):
            if isinstance(node.parent, exp.SetItem) or node.find_ancestor(exp.Set, exp.Property) is not None:
                continue
            name = node.name if node.quoted else node.name.upper()
            if name == "ROWTIME":  # KDA writes "ROWTIME" quoted as often as not: the rowtime
                node.set("this", "ROWTIME")
                node.set("quoted", False)
            else:
                node.set("this", name)
                node.set("quoted", True)
    return statements


# constructs of one dialect: (profile, weight, pattern over the program's tokens, what it is). A
# construct another system shares (PostgreSQL's and RisingWave's CREATE SCHEMA) weighs little.
_EVIDENCE = (
    ("sqlstream", 1, r"\bCREATE (OR REPLACE )?SCHEMA\b", "CREATE SCHEMA"),
    ("sqlstream", 1, r"\bSET SCHEMA\b", "SET SCHEMA"),
    ("sqlstream", 3, r"\bSET PATH\b", "SET PATH"),
    ("sqlstream", 3, r"\bCREATE (OR REPLACE )?(SERVER|FOREIGN STREAM)\b", "CREATE SERVER / CREATE FOREIGN STREAM"),
    ("sqlstream", 3, r"\bALTER PUMP\b", "ALTER PUMP"),
    ("sqlstream", 3, r"\bPUMP [^;]*\b(STOPPED|STARTED)\b", "CREATE PUMP ... STOPPED"),
    ("kda", 3, r"\bWINDOWED BY STAGGER\b", "WINDOWED BY STAGGER"),
    ("kda", 3, r"\bSOURCE_SQL_STREAM_001\b", "SOURCE_SQL_STREAM_001, KDA's input stream"),
    ("kda", 2, r"(^|\n)\s*//", "// comments (KDA and s-Server)"),
    ("risingwave", 3, r"\bFORMAT (PLAIN|UPSERT|DEBEZIUM|CANAL|MAXWELL) ENCODE\b", "FORMAT ... ENCODE"),
    ("risingwave", 3, r"\bROW FORMAT (JSON|CSV|AVRO|PROTOBUF|DEBEZIUM_JSON|UPSERT_JSON|MAXWELL|CANAL_JSON)\b",
     "ROW FORMAT JSON (RisingWave before 1.0)"),
    ("risingwave", 3, r"\bAPPEND ONLY\b", "APPEND ONLY"),
    ("risingwave", 3, r"\bCREATE SECRET\b", "CREATE SECRET"),
    ("risingwave", 3, r"\bINCLUDE (KEY|PARTITION|OFFSET|TIMESTAMP|HEADER|HEADERS|PAYLOAD)\b", "INCLUDE key/partition/offset"),
    ("risingwave", 3, r"\bCONNECTOR = '(POSTGRES-CDC|MYSQL-CDC|DATAGEN|NEXMARK|PULSAR)'", "a RisingWave connector"),
    ("risingwave", 3, r"\bEMIT ON WINDOW CLOSE\b", "EMIT ON WINDOW CLOSE"),
    ("lenses", 3, r"\bWINDOW BY\b", "WINDOW BY"),
    ("lenses", 3, r"\bSET DEFAULTS\s*\.", "SET defaults.*"),
)


def evidence(sql: str) -> tuple[Profile, str] | None:
    """The dialect whose own constructs the program uses most (by weight), and the first of
    them, or None. Comments are not read (but a `//` line, which only KDA and s-Server read as a
    comment); every statement is."""
    from streamjoin.dialect import token_text

    text = token_text(sql)
    scores: dict[str, tuple[int, str]] = {}
    for name, weight, pattern, what in _EVIDENCE:
        if re.search(pattern, sql if pattern.startswith("(^") else text, re.IGNORECASE):
            score, first = scores.get(name, (0, what))
            scores[name] = (score + weight, first)
    if not scores:
        return None
    name = max(scores, key=lambda n: scores[n][0])
    return PROFILES[name], scores[name][1]
