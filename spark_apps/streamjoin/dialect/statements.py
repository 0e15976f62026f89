"""The statements of whole scripts, as `StreamJoinParser` reads them (a mixin: the parser's
statement half): CREATE STREAM | SOURCE | SINK (RisingWave's CREATE SINK ... FROM | INTO | AS),
CREATE PUMP (s-Server's STOPPED, OPTIONS), CREATE [MATERIALIZED] VIEW [IF NOT EXISTS],
s-Server's CREATE SERVER and FOREIGN STREAM | TABLE, and RisingWave's clauses after a table's
columns (APPEND ONLY, ON CONFLICT, FROM source TABLE, INCLUDE, `secret name` values)."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.parsers.risingwave import RisingWaveParser
from sqlglot.tokens import TokenType

from streamjoin.dialect.expressions import Description


class ScriptStatements:
    """Parser methods for the statements of scripts; mixed into `StreamJoinParser`."""

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

    # -- CREATE STREAM | SOURCE | SINK, CREATE VIEW ... DESCRIPTION
    def _parse_create(self):
        index = self._index
        replace = bool(self._match_pair(TokenType.OR, TokenType.REPLACE))
        if self._match_text_seq("STREAM") or self._match(TokenType.SOURCE):
            exists = self._match_text_seq("IF", "NOT", "EXISTS") or None  # RisingWave: CREATE SOURCE IF NOT EXISTS
            return self._declaration("STREAM", self._parse_table(schema=True), replace, exists=exists)
        if self._match(TokenType.SINK):
            return self._parse_sink(replace)
        if self._match_text_seq("PUMP"):  # Kinesis Analytics / s-Server: a pump fills a stream
            return self._parse_pump(replace)
        if self._match_text_seq("SERVER"):  # s-Server: a connector's settings, named
            return self._parse_foreign("SERVER", replace)
        if self._match_text_seq("FOREIGN", "STREAM") or self._match_text_seq("FOREIGN", "TABLE"):
            return self._parse_foreign(f"FOREIGN {self._prev.text.upper()}", replace)
        materialized = bool(self._curr) and self._curr.text.upper() == "MATERIALIZED"
        if self._match(TokenType.VIEW) or self._match_text_seq("MATERIALIZED", "VIEW"):
            view = self._parse_view(replace)
            view.meta["materialized"] = materialized  # RisingWave keeps it up to date: `run` writes it (plan.analyzer.outputs)
            return view
        if self._match(TokenType.FUNCTION) or self._match_text_seq("JAR"):  # s-Server UDXs: read, refused later
            kind = self._prev.text.upper()
            parts = [self._parse_id_var(any_token=True)]
            while self._match(TokenType.DOT):
                parts.append(self._parse_id_var(any_token=True))
            this = exp.Table(this=parts[-1], db=parts[-2] if len(parts) > 1 else None)
            start = self._curr.start if self._curr is not None and not self._at_end() else None
            while not self._at_end():  # the signature and body: Java (EXTERNAL NAME) or SQL, read by plan.analyzer.functions
                self._advance()
            create = self.expression(exp.Create(this=this, kind=kind, replace=replace))
            create.meta["definition"] = self.sql[start:self._prev.end + 1] if start is not None else ""
            return create
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
        if self._match(TokenType.ALIAS) and self._curr and self._curr.token_type == TokenType.MERGE:
            self.raise_error(f"{NOT_SYNTAX}a pump that MERGEs INTO a table (an upsert into a JDBC table) is not "
                             "supported: a pump INSERTs INTO a stream or a sink")
        if not (self._prev.token_type == TokenType.ALIAS and self._match(TokenType.INSERT)):
            self.raise_error("Expected AS INSERT INTO stream SELECT STREAM ... after the pump's name")
        insert = self._parse_insert()
        return self.expression(exp.Create(this=this, kind="PUMP", replace=replace, expression=insert))

    def _parse_view(self, replace: bool):
        exists = self._match_text_seq("IF", "NOT", "EXISTS") or None  # (a script run once: the view is new)
        this = self._parse_table_parts(schema=True)
        if self._match(TokenType.L_PAREN, advance=False):  # CREATE VIEW v ("a", "b") AS: its columns' names
            this = self.expression(exp.Schema(this=this, expressions=self._parse_wrapped_id_vars()))
        description = self._parse_string() if self._match_text_seq("DESCRIPTION") else None
        if not self._match(TokenType.ALIAS):
            self.raise_error("Expected AS and a query after the view's name")
        query = self._parse_select(nested=True)  # AS (SELECT ... UNION ALL ...): the query in parentheses
        create = self.expression(exp.Create(this=this, kind="VIEW", replace=replace, expression=query, exists=exists))
        if description is not None:  # not one of sqlglot's Create args: set after validation
            create.set("description", Description(this=description))
        return create


_TYPED_OPTIONS = {exp.FileFormatProperty: "format", exp.PartitionedByProperty: "partitioned_by"}


NOT_SYNTAX = "unsupported: "  # a parse error's message that is no syntax error: said as it is


def _plain_with_options(create):
    """sqlglot reads `format = ...` and `partitioned_by = ...` inside WITH (...) as typed
    properties; keep them as plain key = value options, as written."""
    properties = create.args.get("properties") if isinstance(create, exp.Create) else None
    for prop in list(properties.expressions) if properties else []:
        key = _TYPED_OPTIONS.get(type(prop))
        if key:
            prop.replace(exp.Property(this=exp.var(key), value=prop.this))
    return create
