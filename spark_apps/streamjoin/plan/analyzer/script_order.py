"""A program as its system ran it, statement by statement: what the set-up statements of whole
scripts do before the analyzer reads the declarations and queries (issue 24).

- **Applied in order**: `DROP ... [IF EXISTS] name` removes what an earlier statement of the file
  created (nothing, for a name not created yet: a script that starts by dropping what an earlier
  run left); `CREATE OR REPLACE` replaces an earlier statement that created the same name. DROPs
  after the last statement that creates or queries are the script's teardown, ignored.
- **Accepted as no-ops, with a note** (explain lists them): schemas (`CREATE SCHEMA`, `SET
  SCHEMA`, `SET PATH`: names resolve by their last part, `plan.analyzer.statements`), starting
  and stopping pumps (`ALTER PUMP ... START | STOP`: pumps run while the query runs), indexes,
  `SET TIME ZONE` (rowtimes are UTC), `DROP SCHEMA`, RisingWave's `FLUSH`.
- Everything else stays for the analyzer, which refuses what it does not run at the statement's
  position (`parse_script` records where each statement starts, comments excluded)."""

from __future__ import annotations

import re

from sqlglot import exp

from streamjoin.plan.scope import Located, relation_name

# statements sqlglot keeps as text (a Command) that change nothing here: (pattern, note)
_NO_OPS = (
    (r"SET\s+SCHEMA\b", "schemas do not qualify names here: a name resolves by its last part"),
    (r"SET\s+PATH\b", "schemas do not qualify names here: a name resolves by its last part"),
    (r"SET\s+TIME\s+ZONE\b", "rowtimes and timestamps are read and written as UTC"),
    (r"ALTER\s+PUMP\b.*\b(START|STOP)\s*$", "pumps run while the application runs (streamjoin run, the apps DAG)"),
    (r"CREATE\s+(OR\s+REPLACE\s+)?SECRET\b", "credentials come from the environment (${NAME} in options); "
                                              "an option `secret name` keeps the secret's name"),
    (r"CREATE\s+(OR\s+REPLACE\s+)?CONNECTION\b", "a connection is read by the connectors that name it, "
                                                  "when streamjoin has them"),
)


def command_text(statement: exp.Command) -> str:
    expression = statement.expression
    text = expression.sql() if isinstance(expression, exp.Expression) else str(expression or "")
    return f"{statement.name} {text}".strip()


def in_order(statements: list[exp.Expression], where: Located) -> tuple[list[exp.Expression], list[str]]:
    """(the statements that remain after DROP, CREATE OR REPLACE and no-ops, the notes on what
    was dropped, replaced or ignored), in file order."""
    kept: list[exp.Expression] = []
    notes: list[str] = []
    # DROPs after the program's last statement that creates or queries are its teardown (a test
    # script cleaning up): the program is what stands before them
    last = max((i for i, st in enumerate(statements) if not isinstance(st, exp.Drop | exp.Set) and _no_op(st) is None),
               default=-1)
    for n, statement in enumerate(statements):
        line = where.position(statement)[0]
        if isinstance(statement, exp.Drop) and n > last:
            notes.append(f"line {line}: DROP {statement.text('kind').upper()} {_dropped(statement)}: the script's "
                         "teardown after its program: ignored")
            continue
        note = _no_op(statement)
        if note is not None:
            notes.append(f"line {line}: {_describe(statement)}: ignored ({note})")
            continue
        if isinstance(statement, exp.Drop):
            name = _dropped(statement)
            before = len(kept)
            kept = [s for s in kept if _creates(s) != name]
            done = "dropped what the file created before" if len(kept) < before else "nothing to drop"
            notes.append(f"line {line}: DROP {statement.text('kind').upper()} {name}: {done}")
            continue
        name = _creates(statement)
        if name is not None and statement.args.get("replace") and any(_creates(s) == name for s in kept):
            kept = [s for s in kept if _creates(s) != name]
            notes.append(f"line {line}: CREATE OR REPLACE {name}: replaces the earlier statement")
        kept.append(statement)
    return kept, notes


def _no_op(statement: exp.Expression) -> str | None:
    if isinstance(statement, exp.Command):
        text = command_text(statement)
        return next((note for pattern, note in _NO_OPS if re.match(pattern, text, re.IGNORECASE | re.DOTALL)), None)
    if isinstance(statement, exp.Create):
        kind = (statement.text("kind") or "").upper()
        if kind == "SCHEMA":
            return "schemas do not qualify names here: a name resolves by its last part"
        if kind == "INDEX":
            return "an index changes no result"
        if kind == "JAR":
            return "Java code is loaded for the UDXs that use it; a CREATE FUNCTION that uses it is refused"
    if isinstance(statement, exp.Drop) and (statement.text("kind") or "").upper() == "SCHEMA":
        return "schemas do not qualify names here"
    if _flush(statement):
        return "RisingWave's FLUSH waits for what was written to be visible: each query here reads every row given before it"
    return None


def _flush(statement: exp.Expression) -> bool:
    """RisingWave's `FLUSH;` (sqlglot reads the lone word as a column)."""
    return isinstance(statement, exp.Column) and not statement.table and statement.name.upper() == "FLUSH"


def _describe(statement: exp.Expression) -> str:
    if _flush(statement):
        return "FLUSH"
    if isinstance(statement, exp.Command):
        return " ".join(command_text(statement).split())[:60]
    kind = (statement.text("kind") or "").upper()
    return f"{statement.key.upper()} {kind}".strip()


def _dropped(statement: exp.Drop) -> str | None:
    table = statement.this if isinstance(statement.this, exp.Table) else next(iter(statement.args.get("tables") or []), None)
    return relation_name(table) if isinstance(table, exp.Table) else None


def _creates(statement: exp.Expression) -> str | None:
    """The name a CREATE statement (a stream, table, view, sink or pump) declares."""
    if not isinstance(statement, exp.Create):
        return None
    target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
    return relation_name(target) if isinstance(target, exp.Table) else None
