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

from streamjoin.dialect.expressions import EMIT_MODES, Description, SelectKind, Within
from streamjoin.dialect.syntax_errors import misspelt_keyword, plain_message, token_error_position, written_wrong
from streamjoin.errors import SqlError, position_of

__all__ = ["StreamJoin", "parse_script", "to_sql", "SelectKind", "Within", "EMIT_MODES"]

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


class StreamJoinParser(RisingWaveParser):
    """RisingWave's parser plus the streaming extensions listed in the module docstring."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._table_suffix: dict = {}

    # RisingWave's clauses after a table's columns, kept as plain options: APPEND ONLY (the table
    # is a stream), ON CONFLICT DO ..., FROM source TABLE 'schema.table' (a CDC table of a shared source)
    PROPERTY_PARSERS = {
        **RisingWaveParser.PROPERTY_PARSERS,
        "APPEND": lambda self: self._parse_word_option("append_only", "APPEND", "ONLY"),
        "ON": lambda self: self._parse_on_conflict() or RisingWaveParser.PROPERTY_PARSERS["ON"](self),
        "FROM": lambda self: self._parse_from_source(),
    }

    def _parse_word_option(self, key: str, *words: str):
        self._match_text_seq(*words[1:])
        return exp.Property(this=exp.var(key), value=exp.Literal.string("true"))

    def _parse_on_conflict(self):
        if not self._match_text_seq("CONFLICT"):
            return None
        words = []
        while self._curr and self._curr.token_type not in (TokenType.SEMICOLON, TokenType.WITH) and not self._at_end():
            words.append(self._curr.text.upper())
            self._advance()
        return exp.Property(this=exp.var("on_conflict"), value=exp.Literal.string(" ".join(words)))

    def _parse_from_source(self):
        source = self._parse_table_parts()
        if not self._match(TokenType.TABLE):
            self.raise_error("Expected TABLE 'schema.table' after FROM source")
        table = self._parse_string()
        return exp.Property(this=exp.var("from_source"), value=exp.Literal.string(f"{source.sql()} {table.name}"))

    # `WITH (start = 'trim_horizon')` (the Kinesis connector) is an option like any other, not a
    # sequence's START WITH
    _KEY_WORDS = ("START", "INCREMENT", "MINVALUE", "MAXVALUE", "CACHE", "CYCLE")

    def _parse_property(self):
        if self._curr and self._next and self._next.token_type == TokenType.EQ and self._curr.text.upper() in self._KEY_WORDS:
            return self._parse_key_value_property()
        return super()._parse_property()

    def _parse_bitwise(self):
        # RisingWave: `password = secret pg_pwd` names a secret (CREATE SECRET): the value 'secret pg_pwd'
        if (self._curr and self._curr.text.upper() == "SECRET" and self._prev and self._prev.token_type == TokenType.EQ
                and self._next and self._next.token_type in (TokenType.VAR, *self.ID_VAR_TOKENS)):
            self._advance(2)
            return exp.Literal.string(f"secret {self._prev.text}")
        return super()._parse_bitwise()

    # RisingWave: INCLUDE key [AS k], INCLUDE header 'name' type [AS h], INCLUDE timestamp ... (sqlglot
    # reads the word after `INCLUDE key` as a header name, and `timestamp WITH (` as a type)
    def _parse_include_property(self):
        this = self._parse_var(any_token=True)
        column_def = None
        if this is not None and this.name.upper() == "HEADER" and self._curr and self._curr.token_type == TokenType.STRING:
            header = self._parse_field()
            column_def = self.expression(exp.ColumnDef(this=header, kind=self._parse_types()))
        alias = self._parse_id_var(tokens=self.ALIAS_TOKENS) if self._match(TokenType.ALIAS) else None
        return self.expression(exp.IncludeProperty(this=this, alias=alias, column_def=column_def))

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

    def _skip_parenthesized(self) -> None:
        """Past `( ... )`, nested parentheses included (options that change nothing here)."""
        if not self._match(TokenType.L_PAREN):
            self.raise_error("Expected ( after OPTIONS")
        depth = 1
        while depth and not self._at_end():
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(self._curr.token_type, 0)
            self._advance()
        if depth:
            self.raise_error("Expected ) to close OPTIONS (...)")

    def _at_end(self) -> bool:
        return self._curr is None or self._curr.token_type == TokenType.SENTINEL

    def _next_text(self) -> str:
        return self._next.text.upper() if self._next else ""

    def _parse_within(self) -> Within:
        token = self._curr
        self._advance()  # WITHIN
        if self._match(TokenType.INTERVAL, advance=False):
            interval = self._parse_interval()
        else:
            number = self._parse_number()
            unit_token = self._curr
            unit = _DURATION_UNITS.get(unit_token.text.upper()) if unit_token else None
            if number is None or unit is None:
                self.raise_error("WITHIN expects a duration such as 5s, 10m, 1h or INTERVAL '5' SECOND")
            self._advance()
            interval = exp.Interval(this=exp.Literal.string(number.name), unit=exp.var(unit))
        return self.expression(Within(this=interval), token)

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

    # -- CREATE STREAM | SOURCE | SINK, CREATE VIEW ... DESCRIPTION
    def _parse_create(self):
        index = self._index
        replace = bool(self._match_pair(TokenType.OR, TokenType.REPLACE))
        if self._match_text_seq("STREAM") or self._match(TokenType.SOURCE):
            return self._declaration("STREAM", self._parse_table(schema=True), replace)
        if self._match(TokenType.SINK):
            return self._parse_sink(replace)
        if self._match_text_seq("PUMP"):  # Kinesis Analytics / s-Server: a pump fills a stream
            return self._parse_pump(replace)
        if self._match_text_seq("SERVER"):  # s-Server: a connector's settings, named
            return self._parse_foreign("SERVER", replace)
        if self._match_text_seq("FOREIGN", "STREAM") or self._match_text_seq("FOREIGN", "TABLE"):
            return self._parse_foreign(f"FOREIGN {self._prev.text.upper()}", replace)
        if self._match(TokenType.VIEW) or self._match_text_seq("MATERIALIZED", "VIEW"):
            return self._parse_view(replace)
        self._retreat(index)
        return _plain_with_options(super()._parse_create())

    def _declaration(self, kind: str, this, replace: bool, **more):
        properties = self._parse_properties()
        return _plain_with_options(
            self.expression(exp.Create(this=this, kind=kind, replace=replace, properties=properties, **more)))

    def _parse_sink(self, replace: bool):
        """CREATE SINK s [(columns)] WITH (...), and RisingWave's CREATE SINK s FROM mv | [INTO t
        [(columns)]] AS query, then WITH (...) [FORMAT ... ENCODE ...]."""
        exists = self._match_text_seq("IF", "NOT", "EXISTS") or None
        this = self._parse_table_parts(schema=True)
        query, into = None, None
        if self._match(TokenType.FROM):
            query = exp.select("*").from_(self._parse_table_parts())
        elif self._match(TokenType.INTO):  # into a table of the program
            into = self._parse_table_parts()
            if self._match(TokenType.L_PAREN, advance=False):
                into = self.expression(exp.Schema(this=into, expressions=self._parse_wrapped_id_vars()))
        if query is None and self._match(TokenType.ALIAS):
            query = self._parse_select()
        if query is None:
            if self._match(TokenType.L_PAREN, advance=False):  # CREATE SINK s (columns) WITH (...)
                this = self._parse_schema(this=this)
            return self._declaration("SINK", this, replace, exists=exists)
        create = self._declaration("SINK", this, replace, expression=query, exists=exists)
        if into is not None:  # not one of sqlglot's Create args: set after validation
            create.set("into", into)
        return create

    def _parse_foreign(self, kind: str, replace: bool):
        """s-Server: CREATE SERVER name [TYPE 't'] [FOREIGN DATA WRAPPER w] [OPTIONS (...)], and
        CREATE FOREIGN STREAM | TABLE name [(columns)] SERVER s [OPTIONS (...)]: the options as
        plain key = 'value' options (keys lower case), the server as `server`, for the analyzer to
        map onto a connector (`plan.analyzer.foreign`)."""
        this = self._parse_table(schema=True) if kind != "SERVER" else self._parse_table_parts()
        options = []
        while self._curr and not self._at_end() and self._curr.token_type != TokenType.SEMICOLON:
            if self._match_text_seq("TYPE"):
                options.append(("type", self._parse_string()))
            elif self._match_text_seq("FOREIGN", "DATA", "WRAPPER") or self._match_text_seq("SERVER"):
                key = "wrapper" if self._prev.text.upper() == "WRAPPER" else "server"
                options.append((key, exp.Literal.string(self._parse_id_var(any_token=True).name)))
            elif self._match_text_seq("OPTIONS"):
                options.extend(self._parse_foreign_options())
            elif self._match_text_seq("DESCRIPTION"):
                self._parse_string()
            else:
                self.raise_error(f"Expected SERVER, OPTIONS or DESCRIPTION in CREATE {kind}")
        properties = exp.Properties(expressions=[exp.Property(this=exp.var(k), value=v) for k, v in options])
        return self.expression(exp.Create(this=this, kind=kind, replace=replace, properties=properties))

    def _parse_foreign_options(self) -> list[tuple[str, exp.Expression]]:
        """OPTIONS ("KEY" 'value', KEY 'value', ...)."""
        if not self._match(TokenType.L_PAREN):
            self.raise_error("Expected ( after OPTIONS")
        options = []
        while not self._match(TokenType.R_PAREN):
            key = self._parse_id_var(any_token=True) or self._parse_string()
            if self._match_pair(TokenType.PARAMETER, TokenType.L_PAREN):
                value = self._parse_template()  # StreamLab's $(NAME) DEFAULT 'value': ${NAME:-value}
            else:
                value = self._parse_primary()
            if key is None or value is None:
                self.raise_error("Expected KEY 'value' in OPTIONS (...)")
            options.append((key.name.lower(), exp.Literal.string(value.name)))
            self._match(TokenType.COMMA)
        return options

    def _parse_template(self) -> exp.Literal:
        name = self._parse_id_var(any_token=True)
        if name is None or not self._match(TokenType.R_PAREN):
            self.raise_error("Expected $(NAME)")
        default = self._parse_string() if self._match(TokenType.DEFAULT) else None
        return exp.Literal.string(f"${{{name.name}:-{default.name}}}" if default is not None else f"${{{name.name}}}")

    def _parse_pump(self, replace: bool):
        this = self._parse_table_parts(schema=True)
        # s-Server: CREATE PUMP p STOPPED [OPTIONS (...)] AS ...: a pump runs while the query runs
        if self._curr and self._curr.text.upper() in ("STOPPED", "STARTED"):
            self._advance()
        if self._match_text_seq("OPTIONS"):
            self._skip_parenthesized()
        if not (self._match(TokenType.ALIAS) and self._match(TokenType.INSERT)):
            self.raise_error("Expected AS INSERT INTO stream SELECT STREAM ... after the pump's name")
        insert = self._parse_insert()
        return self.expression(exp.Create(this=this, kind="PUMP", replace=replace, expression=insert))

    def _parse_view(self, replace: bool):
        exists = self._match_text_seq("IF", "NOT", "EXISTS") or None  # (a script run once: the view is new)
        this = self._parse_table_parts(schema=True)
        description = self._parse_string() if self._match_text_seq("DESCRIPTION") else None
        if not self._match(TokenType.ALIAS):
            self.raise_error("Expected AS and a query after the view's name")
        query = self._parse_select()
        create = self.expression(exp.Create(this=this, kind="VIEW", replace=replace, expression=query, exists=exists))
        if description is not None:  # not one of sqlglot's Create args: set after validation
            create.set("description", Description(this=description))
        return create


_TYPED_OPTIONS = {exp.FileFormatProperty: "format", exp.PartitionedByProperty: "partitioned_by"}


def _plain_with_options(create):
    """sqlglot reads `format = ...` and `partitioned_by = ...` inside WITH (...) as typed
    properties; keep them as plain key = value options, as written."""
    properties = create.args.get("properties") if isinstance(create, exp.Create) else None
    for prop in list(properties.expressions) if properties else []:
        key = _TYPED_OPTIONS.get(type(prop))
        if key:
            prop.replace(exp.Property(this=exp.var(key), value=prop.this))
    return create


class StreamJoinGenerator(RisingWaveGenerator):
    """Generates SQL that StreamJoinParser reads back into the same plan."""

    TRANSFORMS = {
        **RisingWaveGenerator.TRANSFORMS,
        SelectKind: lambda self, e: f" {e.name}",
        Within: lambda self, e: self.within_sql(e),
    }

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
        sql = _slash_comments_as_dashes(sql)
    sql = _DIRECTIVE.sub(lambda m: " " * len(m.group(0)), sql)  # sqlline's !set, StreamLab's !step=: not SQL
    try:
        wrong = written_wrong(sql, _DIALECT.tokenize(sql))
    except TokenError:
        wrong = None  # reported by the parse below, at the quote
    if wrong is not None:
        raise SqlError(wrong[1], filename, *position_of(sql, wrong[0]), wrong[2])
    try:
        with _quiet_fallback():
            statements = _DIALECT.parse(sql, error_level=ErrorLevel.IMMEDIATE)
    except ParseError as error:
        info = error.errors[0] if error.errors else {}
        offset = info.get("offset")
        typo = _misspelt(sql, offset) if offset is not None else None
        if typo is not None:
            raise SqlError(typo[1], filename, *position_of(sql, typo[0]), typo[2]) from None
        line, col = (
            position_of(sql, offset) if offset is not None else (info.get("line", 1), info.get("col", 1))
        )
        message = plain_message(info.get("description") or str(error))
        highlight = info.get("highlight")
        hint = f"near '{highlight}'" if highlight else None
        raise SqlError(f"syntax error: {message}", filename, line, col, hint) from None
    except TokenError as error:
        cause = str(error.__cause__ or error)
        line, col = token_error_position(sql, cause)
        missing = re.match(r"Missing (\S+) from", cause)
        message = f"unterminated {'string' if missing.group(1) == chr(39) else 'quoted name'}: missing {missing.group(1)}" if missing else cause
        raise SqlError(f"syntax error: {message}", filename, line, col, "close the quote") from None
    for statement, start in zip(statements, _statement_starts(sql), strict=False):
        if isinstance(statement, exp.Expression) and start is not None:
            statement.meta["statement_start"] = start
            if isinstance(statement, exp.Command):  # no position of its own: where it starts
                statement.meta.setdefault("offset", start)
    # comment-only chunks (a comment after the last `;`) come back as Semicolon nodes
    return [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]


_DIRECTIVE = re.compile(r"(?m)^[ \t]*![^\n]*")


def directives(sql: str) -> list[tuple[int, str]]:
    """(line, text) of each line that is a client directive (`!set force on`, `!step=...`), which
    `parse_script` reads as blank: sqlline and StreamLab scripts hold them between statements."""
    return [(sql.count("\n", 0, m.start()) + 1, m.group(0).strip()) for m in _DIRECTIVE.finditer(sql)]


def _slash_comments_as_dashes(sql: str) -> str:
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


def token_text(sql: str) -> str:
    """The program's tokens as text, one space apart: no comments, every statement (dialect
    detection reads it, `profiles.evidence`). A program that does not tokenize gives ''."""
    try:
        tokens = _DIALECT.tokenize(sql)
    except TokenError:
        return ""
    return " ".join(sql[t.start:t.end + 1] for t in tokens)


def _statement_starts(sql: str) -> list[int | None]:
    """The offset of each statement's first token, chunked as sqlglot's parser chunks a script
    (`Parser._parse`): one entry per expression `parse` returns."""
    tokens = _DIALECT.tokenize(sql)
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


class _quiet_fallback:
    """sqlglot logs a warning when it keeps a statement it cannot parse as text (a `Command`);
    the analyzer says what it does with such a statement, at its position."""

    def __enter__(self):
        import logging

        self.logger = logging.getLogger("sqlglot")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        self.logger.setLevel(self.level)


def _misspelt(sql: str, offset: int) -> tuple[int, str, str] | None:
    try:
        tokens = _DIALECT.tokenize(sql)
    except TokenError:
        return None
    return misspelt_keyword(tokens, offset)


def to_sql(expression: exp.Expression, pretty: bool = False) -> str:
    """Generate the streaming dialect's SQL for a tree."""
    return _DIALECT.generate(expression, pretty=pretty)

