"""The script's text before and beside parsing: client directives (`!set`), `//` comments
(KDA, s-Server), each statement's start, the tokens as text (dialect detection)."""

from __future__ import annotations

import re

from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

DIRECTIVE = re.compile(r"(?m)^[ \t]*![^\n]*")


def directives(sql: str) -> list[tuple[int, str]]:
    """(line, text) of each line that is a client directive (`!set force on`, `!step=...`), which
    `parse_script` reads as blank: sqlline and StreamLab scripts hold them between statements."""
    return [(sql.count("\n", 0, m.start()) + 1, m.group(0).strip()) for m in DIRECTIVE.finditer(sql)]


def slash_comments_as_dashes(sql: str) -> str:
    """`//` outside quotes and comments written `--` (the same length: positions hold)."""
    out, i, quote = list(sql), 0, None
    while i < len(sql):
        c = sql[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif sql.startswith("--", i) or sql.startswith("//", i):
            out[i:i + 2] = "--"
            i = sql.find("\n", i)
            if i < 0:
                break
        elif sql.startswith("/*", i):
            i = sql.find("*/", i + 2)
            if i < 0:
                break
            i += 1
        i += 1
    return "".join(out)


def token_text(sql: str, tokenize) -> str:
    """The program's tokens as text, one space apart: no comments, every statement (dialect
    detection reads it, `profiles.evidence`). A program that does not tokenize gives ''."""
    try:
        tokens = tokenize(sql)
    except TokenError:
        return ""
    return " ".join(sql[t.start:t.end + 1] for t in tokens)


def statement_starts(tokens: list) -> list[int | None]:
    """The offset of each statement's first token, chunked as sqlglot's parser chunks a script
    (`Parser._parse`): one entry per expression `parse` returns."""
    chunks: list[list] = [[]]
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.SEMICOLON:
            if token.comments:
                chunks.append([token])
            if i < len(tokens) - 1:
                chunks.append([])
        else:
            chunks[-1].append(token)
    return [chunk[0].start if chunk else None for chunk in chunks]


class quiet_fallback:
    """sqlglot logs a warning when it keeps a statement it cannot parse as text (a `Command`);
    the analyzer says what it does with such a statement, at its position."""

    def __enter__(self):
        import logging

        self.logger = logging.getLogger("sqlglot")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        self.logger.setLevel(self.level)


# RisingWave before 1.0 wrote a source's format `ROW FORMAT JSON`; now `FORMAT PLAIN ENCODE JSON`
_ROW_FORMATS = {"JSON": "PLAIN ENCODE JSON", "CSV": "PLAIN ENCODE CSV", "AVRO": "PLAIN ENCODE AVRO",
                "PROTOBUF": "PLAIN ENCODE PROTOBUF", "DEBEZIUM_JSON": "DEBEZIUM ENCODE JSON",
                "DEBEZIUM_AVRO": "DEBEZIUM ENCODE AVRO", "UPSERT_JSON": "UPSERT ENCODE JSON",
                "UPSERT_AVRO": "UPSERT ENCODE AVRO", "MAXWELL": "MAXWELL ENCODE JSON", "CANAL_JSON": "CANAL ENCODE JSON"}
# after the `)` that closes a declaration's columns or WITH options (never inside a string or a WHERE)
_ROW_FORMAT = re.compile(r"(?<=\))(\s*)ROW\s+FORMAT\s+(" + "|".join(_ROW_FORMATS) + r")\b", re.IGNORECASE)


def row_format_as_encode(sql: str) -> str:
    """RisingWave's old `ROW FORMAT JSON` (DEBEZIUM_JSON, UPSERT_JSON, ...) as today's `FORMAT ...
    ENCODE ...` (lines hold; a later error on the same line may point a few columns off)."""
    return _ROW_FORMAT.sub(lambda m: m.group(1) + "FORMAT " + _ROW_FORMATS[m.group(2).upper()], sql)
