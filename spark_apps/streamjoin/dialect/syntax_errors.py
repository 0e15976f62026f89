"""Where a syntax error really is, for the dialect's positioned errors: a misspelt keyword at the
word (not where sqlglot gave up), an unterminated quote at its opening quote.

>>> token_error_position("SELECT 'x", "Missing ' from 1:10")
(1, 8)
"""

from __future__ import annotations

import difflib
import re

from sqlglot.tokens import Token, TokenType

__all__ = ["misspelt_keyword", "plain_message", "token_error_position", "written_wrong"]

_STATEMENT_KEYWORDS = ("CREATE", "SELECT", "INSERT", "WITH", "SET")
_KEYWORDS = (
    *_STATEMENT_KEYWORDS, "FROM", "WHERE", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "OUTER", "CROSS",
    "NATURAL", "ASOF", "USING", "GROUP", "ORDER", "HAVING", "WINDOW", "OVER", "RANGE", "ROWS",
    "PRECEDING", "FOLLOWING", "INTERVAL", "BETWEEN", "WITHIN", "EMIT", "STREAM", "TABLE", "VIEW",
    "SINK", "SOURCE", "INTO", "VALUES", "PRIMARY", "WATERMARK", "DISTINCT",
)


def misspelt_keyword(tokens: list[Token], offset: int) -> tuple[int, str, str] | None:
    """A parse error caused by a misspelt keyword, at the word (not where sqlglot gave up):
    (offset, message, hint), or None. Two cases: the failing statement starts with a plain word
    (`SELEC * FROM s`: sqlglot reads an expression and fails at FROM), or the word at or just
    before the failing token is one letter or two from a keyword (`SELECT * FRM s`)."""
    start, at = 0, len(tokens)
    for index, token in enumerate(tokens):
        if token.start >= offset:
            at = index
            break
        if token.token_type == TokenType.SEMICOLON:
            start = index + 1
    if start >= len(tokens):
        return None
    first = tokens[start]
    if first.token_type == TokenType.VAR:
        close = difflib.get_close_matches(first.text.upper(), _STATEMENT_KEYWORDS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "a statement starts with CREATE, SELECT, INSERT INTO, WITH or SET"
        return first.start, f"syntax error: unknown statement '{first.text}'", hint
    for token in tokens[max(at - 1, start):at + 2]:  # `LEFT JION`: sqlglot gives up at LEFT
        if token.token_type != TokenType.VAR or token.text.upper() in _KEYWORDS:
            continue
        close = difflib.get_close_matches(token.text.upper(), _KEYWORDS, n=1, cutoff=0.75)
        if close:
            return token.start, f"syntax error: unexpected '{token.text}'", f"did you mean {close[0]}?"
    return None


def written_wrong(sql: str, tokens: list[Token]) -> tuple[int, str, str] | None:
    """What sqlglot would misread or reject with its own words, at the token that causes it:
    (offset, message, hint), or None. `//` is no comment in SQL (sqlglot fails on a division
    missing its operand); a comma right before FROM is no column (sqlglot accepts it)."""
    for token, after in zip(tokens, tokens[1:], strict=False):
        if token.token_type == TokenType.SLASH and after.token_type == TokenType.SLASH and after.start == token.end + 1:
            return (token.start, "syntax error: `//` does not start a comment in SQL",
                    "write -- (to the end of the line) or /* ... */; KDA and s-Server read // as a comment: --dialect kda")
        if token.token_type == TokenType.COMMA and after.token_type == TokenType.FROM:
            return token.start, "syntax error: a comma before FROM", "remove the comma after the last column"
    return None


_CLASS = re.compile(r"<class '(?:[\w]+\.)*(\w+)'>")
_WORDS = {"Div": "division (/)", "Mul": "multiplication (*)", "Add": "addition (+)", "Sub": "subtraction (-)",
          "EQ": "comparison (=)", "Select": "SELECT", "Join": "JOIN", "Table": "table name", "Column": "column"}


def plain_message(message: str) -> str:
    """sqlglot's message without its class names: "Required keyword: 'this' missing for <class
    '...Div'>" -> "Required keyword: 'this' missing for a division (/)"."""
    return _CLASS.sub(lambda m: "a " + _WORDS.get(m.group(1), m.group(1).lower()), message)


def token_error_position(sql: str, message: str) -> tuple[int, int]:
    """sqlglot's tokenizer says e.g. "Missing ' from 2:38" (a position past the quote): point
    at the opening quote, the last one at or before that position on that line."""
    match = re.search(r"Missing (\S+) from (\d+):(\d+)", message)
    if not match:
        return 1, 1
    quote, line, col = match.group(1), int(match.group(2)), int(match.group(3))
    text = sql.splitlines()[line - 1] if line <= len(sql.splitlines()) else ""
    opening = text.rfind(quote, 0, col)
    return line, (opening + 1 if opening >= 0 else max(col, 1))
