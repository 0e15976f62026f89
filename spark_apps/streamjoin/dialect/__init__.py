"""The streaming-join SQL dialect: RisingWave's sqlglot dialect plus the seeds' extensions.

Additions, each a small override or table entry:

- ``SELECT STREAM`` / ``SELECT TABLE`` (s-Server, Lenses);
- a window on a join input, ``FROM s OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a``
  or ``OVER w`` (s-Server, Kinesis, SQLstream);
- Lenses ``WITHIN 5s`` on a join, before or after its ON;
- a trailing ``EMIT FINAL | EAGER | CHANGES``;
- ``CREATE STREAM | SOURCE | SINK``, ``CREATE VIEW v DESCRIPTION '...' AS``;
- ``CREATE [OR REPLACE] PUMP p AS INSERT INTO s SELECT STREAM ...`` (Kinesis Analytics, s-Server);
- Lenses ``WITH name AS (query);`` as a statement of its own.

Everything else (ASOF, NATURAL, USING, ``FOR SYSTEM_TIME AS OF``, ``FLOOR(x TO HOUR)``,
``WATERMARK FOR``, ``TUMBLE(...)`` in FROM, interval literals) comes from the parent.

Example
-------
>>> from streamjoin.dialect import parse_script, to_sql
>>> [q] = parse_script("SELECT STREAM * FROM a OVER (ROWS 5 PRECEDING) JOIN b ON a.k = b.k")
>>> to_sql(q)
'SELECT STREAM * FROM a OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) INNER JOIN b ON a.k = b.k'
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.risingwave import RisingWave
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.generators.risingwave import RisingWaveGenerator
from sqlglot.parsers.risingwave import RisingWaveParser
from sqlglot.tokens import TokenType

from streamjoin.dialect.clauses import SystemClauses
from streamjoin.dialect.expressions import EMIT_MODES, SelectKind, SpanOf, StepBy, Within
from streamjoin.dialect.statements import NOT_SYNTAX, ScriptStatements
from streamjoin.dialect.syntax_errors import misspelt_keyword, plain_message, token_error_position, written_wrong
from streamjoin.dialect.text import (
    DIRECTIVE,
    directives,
    quiet_fallback,
    row_format_as_encode,
    slash_comments_as_dashes,
    statement_starts,
)
from streamjoin.dialect.text import token_text as text_of_tokens
from streamjoin.errors import SqlError, position_of

__all__ = ["StreamJoin", "parse_script", "to_sql", "SelectKind", "Within", "EMIT_MODES", "directives", "token_text"]

# Lenses durations: 5s, 10m, 1h, 250ms, 2d.
_DURATION_UNITS = {
    "MS": "MILLISECOND",
    "S": "SECOND",
    "SEC": "SECOND",
    "SECOND": "SECOND",
    "SECONDS": "SECOND",
    "M": "MINUTE",
    "MIN": "MINUTE",
    "MINUTE": "MINUTE",
    "MINUTES": "MINUTE",
    "H": "HOUR",
    "HOUR": "HOUR",
    "HOURS": "HOUR",
    "D": "DAY",
    "DAY": "DAY",
    "DAYS": "DAY",
}
_DURATION_ABBREVIATIONS = {"MILLISECOND": "ms", "SECOND": "s", "MINUTE": "m", "HOUR": "h", "DAY": "d"}

# Words that end a FROM item and so never name its alias.
_NOT_AN_ALIAS = {"EMIT", "WITHIN", "OVER"}


class StreamJoinParser(ScriptStatements, SystemClauses, RisingWaveParser):
    """RisingWave's parser plus the streaming extensions listed in the module docstring."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._table_suffix: dict = {}

    # `WITH (start = 'trim_horizon')` (the Kinesis connector) is an option like any other, not a
    # sequence's START WITH
    _KEY_WORDS = ("START", "INCREMENT", "MINVALUE", "MAXVALUE", "CACHE", "CYCLE")

    def _parse_property(self):
        if self._curr and self._next and self._next.token_type == TokenType.EQ and self._curr.text.upper() in self._KEY_WORDS:
            return self._parse_key_value_property()
        return super()._parse_property()

    # -- errors carry the offending token's offset, so we can report line:col exactly
    def raise_error(self, message, token=None):
        token = token or self._curr or self._prev
        try:
            super().raise_error(message, token) if token else super().raise_error(message)
        except ParseError as error:
            if token is not None and error.errors:
                error.errors[0]["offset"] = token.start
            raise

    # -- SELECT STREAM | SELECT TABLE
    def _parse_hint(self):
        if (
            self._prev
            and self._prev.token_type == TokenType.SELECT
            and self._curr
            and self._curr.text.upper() in ("STREAM", "TABLE")
            and (
                self._next is None
                or self._next.token_type
                not in (TokenType.COMMA, TokenType.DOT, TokenType.FROM, TokenType.ALIAS)
            )
        ):
            self._advance()
            return self.expression(SelectKind(this=exp.var(self._prev.text.upper())), self._prev)
        return super()._parse_hint()

    # -- Lenses topic names with hyphens, unquoted: FROM src-app-users-json (no spaces around `-`;
    #    in FROM and INTO a subtraction is no name, so nothing else reads this way)
    def _parse_table_part(self, schema: bool = False):
        part = super()._parse_table_part(schema)
        if not isinstance(part, exp.Identifier) or part.quoted:
            return part
        name, end = part.name, self._prev.end
        while (self._curr and self._curr.token_type == TokenType.DASH and self._curr.start == end + 1
               and self._next and self._next.start == self._curr.end + 1
               and self._next.token_type in (TokenType.VAR, TokenType.NUMBER, *self.ID_VAR_TOKENS)):
            self._advance()
            name, end = f"{name}-{self._curr.text}", self._curr.end
            self._advance()
        if name != part.name:
            part = exp.Identifier(this=name, quoted=True)
        return part

    # -- OVER window and WITHIN on a FROM item (they come before its alias)
    def _parse_table(self, *args, **kwargs):
        outer, self._table_suffix = self._table_suffix, {}
        try:
            this = super()._parse_table(*args, **kwargs)
            for key, value in self._table_suffix.items():
                if this is not None and value is not None:
                    this.set(key, value)
            return this
        finally:
            self._table_suffix = outer

    def _parse_table_alias(self, alias_tokens=None):
        self._parse_input_window()
        alias = None
        if not (self._curr and self._curr.text.upper() in _NOT_AN_ALIAS):
            alias = super()._parse_table_alias(alias_tokens)
        # SQLstream also writes the window after the alias: "Transactions" AS TX OVER (...)
        if alias is not None and "window" not in self._table_suffix:
            self._parse_input_window(keep_within=True)
        self._parse_input_within()
        return alias

    def _parse_input_window(self, keep_within: bool = False) -> None:
        self._table_suffix.pop("window", None)
        if not keep_within:
            self._table_suffix.pop("within", None)
        if self._curr and self._curr.token_type == TokenType.OVER:
            over = self._curr
            window = self._parse_window(exp.Placeholder())
            if isinstance(window, exp.Window):
                window.update_positions(over)
                self._table_suffix["window"] = window
        self._parse_input_within()

    def _parse_input_within(self) -> None:
        if self._curr and self._curr.text.upper() == "WITHIN" and self._next_text() != "GROUP":
            self._table_suffix["within"] = self._parse_within()

    def _at_end(self) -> bool:
        return self._curr is None or self._curr.token_type == TokenType.SENTINEL

    def _next_text(self) -> str:
        return self._next.text.upper() if self._next else ""

    def _parse_within(self) -> Within:
        token = self._curr
        self._advance()  # WITHIN
        return self.expression(Within(this=self._parse_within_duration()), token)

    def _parse_within_duration(self) -> exp.Interval:
        """A Lenses duration (5s, 10m, 1h) or an interval literal."""
        if self._match(TokenType.INTERVAL, advance=False):
            return self._parse_interval()
        number = self._parse_number()
        unit_token = self._curr
        unit = _DURATION_UNITS.get(unit_token.text.upper()) if unit_token else None
        if number is None or unit is None:
            self.raise_error("expected a duration such as 5s, 10m, 1h or INTERVAL '5' SECOND")
        self._advance()
        return exp.Interval(this=exp.Literal.string(number.name), unit=exp.var(unit))

    # -- joins keep their position (for errors) and take a WITHIN after ON
    def _parse_join(self, *args, **kwargs):
        start = self._curr
        join = super()._parse_join(*args, **kwargs)
        if join is None:
            return None
        if start is not None:
            join.meta.setdefault("offset", start.start)
            # `a JOIN b` without a condition must not read back as the comma join `a, b`
            plain = not (join.args.get("kind") or join.args.get("side") or join.args.get("method"))
            if plain and start.token_type != TokenType.COMMA:
                join.set("kind", "INNER")
        table_within = join.this.args.get("within") if join.this is not None else None
        if table_within is not None:
            join.this.set("within", None)
            join.set("within", table_within)
        if self._curr and self._curr.text.upper() == "WITHIN":
            first, token = join.args.get("within"), self._curr
            second = self._parse_within()
            if first is not None and first.this != second.this:
                self.raise_error("WITHIN is given twice with different durations", token)
            join.set("within", second)
        return join

    # -- statements: Lenses WITH-as-statement, trailing EMIT
    def _parse_statement(self):
        if self._curr and self._curr.token_type == TokenType.WITH:
            index = self._index
            with_ = self._parse_with()
            if with_ is not None and self._at_end():
                return with_
            self._retreat(index)
        statement = super()._parse_statement()
        if self._curr and self._curr.text.upper() == "EMIT":
            emit_token = self._curr
            self._advance()
            if self._match_text_seq("ON", "WINDOW", "CLOSE"):  # RisingWave: a window's rows once it closes
                mode = "FINAL"
            elif not (self._curr and self._curr.text.upper() in EMIT_MODES):
                self.raise_error("EMIT must be followed by FINAL, EAGER, CHANGES or ON WINDOW CLOSE")
            else:
                mode = self._curr.text.upper()
                self._advance()
            query = statement if isinstance(statement, exp.Query) else statement.expression
            if isinstance(query, exp.Insert):  # CREATE PUMP p AS INSERT INTO s SELECT ... EMIT ...
                query = query.expression
            if not isinstance(query, exp.Query):
                self.raise_error("EMIT applies to a query", emit_token)
            query.set("emit", exp.var(mode))
        return statement

class StreamJoinGenerator(RisingWaveGenerator):
    """Generates SQL that StreamJoinParser reads back into the same plan."""

    TRANSFORMS = {
        **RisingWaveGenerator.TRANSFORMS,
        SelectKind: lambda self, e: f" {e.name}",
        Within: lambda self, e: self.within_sql(e),
        StepBy: lambda self, e: f"STEP({self.sql(e, 'this')} BY {self.sql(e, 'expression')})",
        SpanOf: lambda self, e: f"{self.sql(e, 'this')} {self.sql(e, 'unit')}",
    }

    # s-Server's analytic function modifiers, written back as read (PostgreSQL's generator drops them)
    def nthvalue_sql(self, expression: exp.NthValue) -> str:
        sql = self.function_fallback_sql(expression)
        first = expression.args.get("from_first")
        return sql if first is None else f"{sql} FROM {'FIRST' if first else 'LAST'}"

    def ignorenulls_sql(self, expression: exp.IgnoreNulls) -> str:
        return f"{self.sql(expression.this)} IGNORE NULLS"

    def respectnulls_sql(self, expression: exp.RespectNulls) -> str:
        return f"{self.sql(expression.this)} RESPECT NULLS"

    def within_sql(self, expression: Within) -> str:
        interval = expression.this
        unit = interval.args.get("unit")
        abbreviation = _DURATION_ABBREVIATIONS.get(unit.name.upper()) if isinstance(unit, exp.Var) else None
        if abbreviation and re.fullmatch(r"\d+", interval.name):
            return f"WITHIN {interval.name}{abbreviation}"
        return f"WITHIN {self.sql(interval)}"  # e.g. INTERVAL '1:30' MINUTE TO SECOND

    def select_sql(self, expression: exp.Select) -> str:
        sql = super().select_sql(expression)
        emit = expression.args.get("emit")
        return f"{sql} EMIT {emit.name}" if emit else sql

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        window = expression.args.get("window")
        within = expression.args.get("within")
        if not window and not within:
            return super().table_sql(expression, sep)
        bare = expression.copy()
        for key in ("window", "within", "alias"):
            bare.set(key, None)
        sql = super().table_sql(bare, sep)
        if window:
            sql += " " + re.sub(r"^.*?(?=OVER\b)", "", self.sql(window), count=1)
        if within:
            sql += " " + self.sql(within)
        alias = self.sql(expression, "alias")
        return f"{sql}{sep}{alias}" if alias else sql

    def join_sql(self, expression: exp.Join, join_op: str | None = None) -> str:
        sql = super().join_sql(expression, join_op)
        within = expression.args.get("within")
        return f"{sql} {self.sql(within)}" if within else sql

    def version_sql(self, expression: exp.Version) -> str:
        return super().version_sql(expression).replace("FOR TIMESTAMP", "FOR SYSTEM_TIME", 1)

    def create_sql(self, expression: exp.Create) -> str:
        description = expression.args.get("description")
        if expression.text("kind").upper() == "PUMP":
            replace = " OR REPLACE" if expression.args.get("replace") else ""
            return f"CREATE{replace} PUMP {self.sql(expression, 'this')} AS {self.sql(expression, 'expression')}"
        if not description:
            return super().create_sql(expression)
        replace = " OR REPLACE" if expression.args.get("replace") else ""
        return (
            f"CREATE{replace} VIEW {self.sql(expression, 'this')} "
            f"DESCRIPTION {self.sql(description, 'this')} AS {self.sql(expression, 'expression')}"
        )


class StreamJoin(RisingWave):
    """The streaming-join dialect (see the module docstring)."""

    ALIAS_POST_VERSION = True  # RisingWave: `t FOR SYSTEM_TIME AS OF PROCTIME() AS alias`

    Parser = StreamJoinParser
    Generator = StreamJoinGenerator


_DIALECT = StreamJoin()


def parse_script(sql: str, filename: str = "<sql>", slash_comments: bool = False) -> list[exp.Expression]:
    """Parse a script of `;`-separated statements; a syntax error raises SqlError. Each
    statement records where it starts (its first token, never a comment before it), so an error
    about a statement sqlglot kept as text (a `Command`) points at that statement.
    `slash_comments`: `//` starts a comment, as in KDA's and s-Server's parsers (Calcite's)."""
    if slash_comments:
        sql = slash_comments_as_dashes(sql)
    sql = DIRECTIVE.sub(lambda m: " " * len(m.group(0)), sql)  # sqlline's !set, StreamLab's !step=: not SQL
    sql = row_format_as_encode(sql)
    try:
        wrong = written_wrong(sql, _DIALECT.tokenize(sql))
    except TokenError:
        wrong = None  # reported by the parse below, at the quote
    if wrong is not None:
        raise SqlError(wrong[1], filename, *position_of(sql, wrong[0]), wrong[2])
    try:
        with quiet_fallback():
            statements = _DIALECT.parse(sql, error_level=ErrorLevel.IMMEDIATE)
    except ParseError as error:
        raise _parse_error(sql, filename, error) from None
    except TokenError as error:
        raise _token_error(sql, filename, error) from None
    for statement, start in zip(statements, statement_starts(_DIALECT.tokenize(sql)), strict=False):
        if isinstance(statement, exp.Expression) and start is not None:
            statement.meta["statement_start"] = start
            if isinstance(statement, exp.Command):  # no position of its own: where it starts
                statement.meta.setdefault("offset", start)
    # comment-only chunks (a comment after the last `;`) come back as Semicolon nodes
    return [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]


def _parse_error(sql: str, filename: str, error: ParseError) -> SqlError:
    """sqlglot's parse error as ours: at the token, in SQL words (a misspelt keyword named)."""
    info = error.errors[0] if error.errors else {}
    offset = info.get("offset")
    typo = _misspelt(sql, offset) if offset is not None else None
    if typo is not None:
        return SqlError(typo[1], filename, *position_of(sql, typo[0]), typo[2])
    line, col = position_of(sql, offset) if offset is not None else (info.get("line", 1), info.get("col", 1))
    message = plain_message(info.get("description") or str(error))
    if message.startswith(NOT_SYNTAX):  # valid SQL that streamjoin does not run
        return SqlError(message.removeprefix(NOT_SYNTAX), filename, line, col)
    highlight = info.get("highlight")
    return SqlError(f"syntax error: {message}", filename, line, col, f"near '{highlight}'" if highlight else None)


def _token_error(sql: str, filename: str, error: TokenError) -> SqlError:
    """A text sqlglot cannot split into tokens: an unterminated string or quoted name, at its quote."""
    cause = str(error.__cause__ or error)
    line, col = token_error_position(sql, cause)
    start = getattr(error, "start", None)
    if not re.match(r"Missing (\S+) from", cause):
        if isinstance(start, int) and 0 <= start < len(sql) and sql[start] in "'\"":  # ran off the end in a quote
            cause = f"Missing {sql[start]} from"
            line, col = position_of(sql, start)
        else:
            return SqlError("syntax error: text that is no SQL token", filename, line, col)
    missing = re.match(r"Missing (\S+) from", cause).group(1)
    message = f"unterminated {'string' if missing == chr(39) else 'quoted name'}: missing {missing}"
    return SqlError(f"syntax error: {message}", filename, line, col, "close the quote")


def token_text(sql: str) -> str:
    """The program's tokens as text (`text.token_text`): what dialect detection reads."""
    return text_of_tokens(sql, _DIALECT.tokenize)


def _misspelt(sql: str, offset: int) -> tuple[int, str, str] | None:
    try:
        tokens = _DIALECT.tokenize(sql)
    except TokenError:
        return None
    return misspelt_keyword(tokens, offset)


def to_sql(expression: exp.Expression, pretty: bool = False) -> str:
    """Generate the streaming dialect's SQL for a tree."""
    return _DIALECT.generate(expression, pretty=pretty)

