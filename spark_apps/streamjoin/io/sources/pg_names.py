"""PostgreSQL names as a user writes them (`table`, `schema.table`, `"Quoted"`), resolved against
the server's catalog the way PostgreSQL folds them: an unquoted name matches case-insensitively,
preferring PostgreSQL's lower-case folding and then the exact spelling; a quoted name matches only
exactly; a tie is an error naming the candidates. The names are bound as query parameters, never
spliced into SQL.

>>> split_name('sales."Daily Totals"')
[('sales', False), ('Daily Totals', True)]
"""

from __future__ import annotations

__all__ = ["match_column", "resolve_table", "split_name", "table_columns"]


def split_name(name: str) -> list[tuple[str, bool]]:
    """`a."B c".d` -> [("a", False), ("B c", True), ("d", False)] (part, was quoted)."""
    parts: list[tuple[str, bool]] = []
    i, n = 0, len(name)
    while i <= n:
        while i < n and name[i].isspace():
            i += 1
        if i < n and name[i] == '"':
            part, i = _quoted_part(name, i)
            parts.append((part, True))
            while i < n and name[i].isspace():
                i += 1
        else:
            j = name.find(".", i)
            j = n if j < 0 else j
            part = name[i:j].strip()
            if not part:
                raise ValueError(f"bad table name {name!r}")
            parts.append((part, False))
            i = j
        if i >= n:
            break
        if name[i] != ".":
            raise ValueError(f"bad table name {name!r}")
        i += 1
    if not 1 <= len(parts) <= 2:
        raise ValueError(f"bad table name {name!r} (want table or schema.table)")
    return parts


def _quoted_part(name: str, i: int) -> tuple[str, int]:
    """The quoted part of `name` that starts at `i` (a `""` inside stands for `"`), and where it ends."""
    j, buf, n = i + 1, [], len(name)
    while True:
        if j >= n:
            raise ValueError(f"unbalanced quotes in table name {name!r}")
        if name[j] == '"':
            if j + 1 < n and name[j + 1] == '"':
                buf.append('"')
                j += 2
                continue
            return "".join(buf), j + 1
        buf.append(name[j])
        j += 1


def _match_rank(wanted: str, quoted: bool, actual: str) -> int | None:
    """How well `actual` matches `wanted`: 3 exact, 2 PostgreSQL's folding of an unquoted name,
    1 equal ignoring case, None no match (a quoted name only matches exactly)."""
    if actual == wanted:
        return 3
    if quoted:
        return None
    if actual == wanted.lower():
        return 2
    if actual.lower() == wanted.lower():
        return 1
    return None


def _best(candidates: list, rank, what: str, show=str):
    """The one best-ranked candidate; None if none match; ValueError if the best is a tie."""
    ranked = [(r, c) for c in candidates if (r := rank(c)) is not None]
    if not ranked:
        return None
    top = max(r for r, _ in ranked)
    best = [c for r, c in ranked if r == top]
    if len(best) > 1:
        raise ValueError(f"{what} is ambiguous: it matches {', '.join(map(show, best))}")
    return best[0]


def resolve_table(cur, table: str, location: str) -> tuple[int, str, str]:
    """(oid, schema, name) of a table, view or materialized view; names match case-insensitively
    unless quoted, preferring the exact spelling."""
    parts = split_name(table)
    (rel, rel_q) = parts[-1]
    nsp, nsp_q = parts[0] if len(parts) == 2 else (None, False)
    cur.execute(
        """
        SELECT c.oid, n.nspname, c.relname
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND lower(c.relname) = lower(%(rel)s)
          AND CASE WHEN %(nsp)s::text IS NULL THEN pg_catalog.pg_table_is_visible(c.oid)
                   ELSE lower(n.nspname) = lower(%(nsp)s::text) END
        """,
        {"rel": rel, "nsp": nsp},
    )
    rows = cur.fetchall()

    def rank(row):
        r = _match_rank(rel, rel_q, row[2])
        if r is None or nsp is None:
            return r
        s = _match_rank(nsp, nsp_q, row[1])
        return None if s is None else (s, r)

    try:
        found = _best(rows, rank, f"PostgreSQL table name {table!r}", show=lambda row: f'"{row[1]}"."{row[2]}"')
    except ValueError as e:
        raise ValueError(f"{e} at {location}") from None
    if found is None:
        raise ValueError(f"PostgreSQL table {table!r} does not exist at {location}")
    return found


def table_columns(cur, oid: int) -> list[str]:
    cur.execute(
        "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        (oid,),
    )
    return [r[0] for r in cur.fetchall()]


def match_column(field: str, columns: list[str], label: str) -> str:
    found = _best(columns, lambda c: _match_rank(field, False, c), f"column {field!r} of {label}")
    if found is None:
        raise ValueError(f"{label} has no column {field!r} (it has {', '.join(columns) or 'no columns'})")
    return found
