"""Clauses of the four systems that the streaming dialect reads inside queries (a parser mixin):
s-Server's `STEP(ts BY interval)`, `(ts1 - ts2) SECOND`, `NTH_VALUE(...) FROM LAST`, t-sort
`ORDER BY ... WITHIN` and session windows `PARTITION BY SESSION ON ...` (the last two read to be
refused with a reason), and Lenses' `WINDOW BY TUMBLE 10s` / `HOP 5m,1m`."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.parsers.risingwave import RisingWaveParser
from sqlglot.tokens import TokenType

from streamjoin.dialect.expressions import SpanOf, StepBy
from streamjoin.dialect.statements import NOT_SYNTAX

_UNITS = ("MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY")


class SystemClauses:
    """Parser methods for the clauses above (mixed into `StreamJoinParser`)."""

    SUPPORTS_NTH_VALUE_FROM_MODIFIER = True  # s-Server: NTH_VALUE(x, 2) FROM LAST RESPECT NULLS OVER w

    FUNCTION_PARSERS = {**RisingWaveParser.FUNCTION_PARSERS, "STEP": lambda self: self._parse_step()}

    def _parse_paren(self):
        """s-Server's interval of a difference: `(ts - TIMESTAMP '1970-01-01 00:00:00') SECOND`,
        the seconds between two instants (StreamLab's tumbling-window idiom divides it)."""
        this = super()._parse_paren()
        if (isinstance(this, exp.Paren) and isinstance(this.this, exp.Sub) and self._curr and self._next
                and self._curr.text.upper() in _UNITS and self._curr.token_type != TokenType.STRING
                and (self._next.token_type in (TokenType.SLASH, TokenType.STAR, TokenType.R_PAREN)
                     or self._next.text.upper() == "TO")):
            unit = self._curr.text.upper()
            self._advance()
            return self.expression(SpanOf(this=this, unit=exp.var(unit)))
        return this

    def _parse_step(self):
        """s-Server `STEP(ts BY INTERVAL 'n' unit)`; one whole unit is `FLOOR(ts TO unit)`."""
        this = self._parse_assignment()
        if not self._match_text_seq("BY"):
            self.raise_error("STEP expects STEP(<timestamp> BY INTERVAL 'n' <unit>)")
        interval = self._parse_interval()
        if not isinstance(interval, exp.Interval):
            self.raise_error("STEP expects an interval after BY, e.g. STEP(ROWTIME BY INTERVAL '10' SECOND)")
        unit = interval.args.get("unit")
        if interval.name.strip() == "1" and isinstance(unit, exp.Var) and unit.name.upper() in _UNITS:
            return self.expression(exp.Floor(this=this, to=exp.var(unit.name.upper())))
        return self.expression(StepBy(this=this, expression=interval))

    QUERY_MODIFIER_PARSERS = {
        **RisingWaveParser.QUERY_MODIFIER_PARSERS,
        TokenType.WINDOW: lambda self: self._parse_window_modifier(),
    }

    def _parse_window_modifier(self):
        """A named WINDOW clause, or Lenses' `WINDOW BY TUMBLE 10s` / `WINDOW BY HOP 5m,1m`."""
        if not (self._next and self._next.text.upper() == "BY"):
            return "windows", self._parse_window_clause()
        start = self._curr
        self._advance(2)
        kind = self._curr.text.upper() if self._curr else ""
        if kind not in ("TUMBLE", "HOP"):
            self.raise_error(f"{NOT_SYNTAX}WINDOW BY {kind or '...'} is not supported: WINDOW BY TUMBLE <duration> "
                             "and WINDOW BY HOP <size>,<advance> are")
        self._advance()
        sizes = [self._parse_within_duration()]
        if kind == "HOP":
            if not self._match(TokenType.COMMA):
                self.raise_error("WINDOW BY HOP takes a size and an advance: WINDOW BY HOP 5m,1m")
            sizes.append(self._parse_within_duration())
        window = exp.Anonymous(this=kind, expressions=sizes)
        window.meta["offset"] = start.start
        return "lenses_window", window

    def _parse_order(self, *args, **kwargs):
        """`ORDER BY ... WITHIN INTERVAL '30' SECOND` (s-Server's t-sort): read, with the interval
        kept on the ORDER BY, for the analyzer to refuse with a reason."""
        order = super()._parse_order(*args, **kwargs)
        if isinstance(order, exp.Order) and self._curr and self._curr.text.upper() == "WITHIN" \
                and self._next and self._next.token_type == TokenType.INTERVAL:
            order.set("within", self._parse_within())  # as Lenses' WITHIN on a join is read
        return order

    def _parse_partition_by(self):
        """s-Server's session window, `PARTITION BY SESSION ON k TIMEOUT AFTER INTERVAL '1' HOUR`:
        read as one partition item `SESSION(k, ..., interval)` for the analyzer to refuse."""
        if self._curr and self._curr.token_type == TokenType.PARTITION_BY and self._next \
                and self._next.text.upper() == "SESSION":
            token = self._next
            self._advance(2)
            if not self._match(TokenType.ON):
                self.raise_error("Expected ON after PARTITION BY SESSION")
            keys = self._parse_csv(self._parse_disjunction)
            if not self._match_text_seq("TIMEOUT", "AFTER"):
                self.raise_error("Expected TIMEOUT AFTER INTERVAL ... after the session's keys")
            session = exp.Anonymous(this="SESSION", expressions=[*keys, self._parse_interval()])
            session.meta["offset"] = token.start
            return [session]
        return super()._parse_partition_by()

    def _parse_query_modifiers(self, this):
        this = super()._parse_query_modifiers(this)
        window = this.args.get("lenses_window") if isinstance(this, exp.Select) else None
        if window is not None:
            this.set("lenses_window", None)
            _as_window_function(this, window)
        return this


def _as_window_function(select: exp.Select, window: exp.Anonymous) -> None:
    """Lenses `FROM s WINDOW BY TUMBLE 10s GROUP BY k` is `FROM TUMBLE(s, rowtime, INTERVAL '10'
    SECOND) AS s GROUP BY window_start, k` (HOP: size then advance, as HOP(s, rowtime, advance, size))."""
    item = select.args.get("from_").this if select.args.get("from_") else None
    if not isinstance(item, exp.Table) or select.args.get("joins"):
        return  # the analyzer refuses a window over a join or a subquery at the FROM item
    sizes = list(window.expressions)
    if window.name.upper() == "HOP":
        sizes = [sizes[1], sizes[0]]
    alias = item.args.get("alias")
    source = exp.Table(this=item.this.copy(), db=item.args.get("db"))
    call = exp.Anonymous(this=window.name.upper(), expressions=[source, exp.column("rowtime"), *sizes])
    call.meta["offset"] = window.meta.get("offset")
    name = alias.this.copy() if alias is not None else item.this.copy()
    select.args["from_"].set("this", exp.Table(this=call, alias=exp.TableAlias(this=name)))
    group = select.args.get("group")
    start = exp.column("window_start")
    if group is None:
        select.set("group", exp.Group(expressions=[start]))
    else:
        group.set("expressions", [start, *group.expressions])
