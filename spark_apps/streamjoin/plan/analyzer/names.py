"""Names in one SELECT: its FROM items, the USING / NATURAL columns merged so far, and how a
column reference resolves (qualified, unqualified, `*`), with errors that name the candidates."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from sqlglot import exp

from streamjoin.dialect import to_sql
from streamjoin.plan.arithmetic import integer_division
from streamjoin.plan.conditions import Ref
from streamjoin.plan.model import Kind, Relation, TimeWindowFunction
from streamjoin.plan.scope import Located, ident_name, offset_of

OUTPUT_ROWTIME = "ROWTIME"


@dataclass
class Item:
    """A FROM item while the query is being analysed."""

    alias: str
    relation: Relation
    node: exp.Expression
    window: object = None
    window_source: str = "default"
    temporal: bool = False
    time_window: TimeWindowFunction | None = None
    hidden: bool = False  # a subquery's view (plan.analyzer.subqueries): `*` and unqualified names skip it

    @property
    def is_stream(self) -> bool:
        return self.relation.kind == Kind.STREAM

    @property
    def columns(self) -> tuple[str, ...]:
        extra = ("window_start", "window_end") if self.time_window else ()
        return self.relation.column_names() + extra


def ident(name: str) -> exp.Identifier:
    """An identifier that reads back as the same name (quoted unless plain lower case)."""
    return exp.Identifier(this=name, quoted=not re.fullmatch(r"[a-z_][a-z0-9_]*", name))


def qualified(ref: Ref) -> exp.Column:
    col = exp.Column(this=ident(ref.column), table=ident(ref.alias))
    col.meta["ref"] = ref
    return col


def is_rowtime(node: exp.Expression) -> bool:
    """The output ROWTIME, or a column resolved to an input's rowtime."""
    if not isinstance(node, exp.Column):
        return False
    ref = node.meta.get("ref")
    return ref.is_rowtime if ref is not None else node.name == OUTPUT_ROWTIME


def star_columns(item: Item) -> tuple[str, ...]:
    """`*` brings the declared columns; an implicit ROWTIME is selected by name only."""
    implicit = item.relation.rowtime if item.relation.implicit_rowtime else None
    return tuple(c for c in item.columns if c != implicit)


@dataclass
class Scope:
    """The FROM items of one SELECT and its merged USING columns."""

    where: Located
    items: list[Item] = field(default_factory=list)
    using: dict[str, exp.Expression] = field(default_factory=dict)  # USING / NATURAL column -> COALESCE(...)
    using_order: list[str] = field(default_factory=list)
    using_members: dict[str, set[str]] = field(default_factory=dict)  # USING column -> aliases merged into it

    def item(self, alias: str) -> Item:
        return next(i for i in self.items if i.alias == alias)

    def resolve(self, col: exp.Column, items: list[Item], output_rowtime: bool):
        """A Ref, an exp for a USING column, or OUTPUT_ROWTIME."""
        name = ident_name(col.this)
        if col.find_ancestor(exp.Parameter) is not None:  # s-Server's `$(shard AS INT)`: its deployment's value
            template = col.find_ancestor(exp.Parameter)
            self.where.fail(f"$({col.this.name} ...) is an s-Server substitution parameter, whose value s-Server's "
                            "deployment gives (a sharded pump's OPTIONS): streamjoin substitutes none in a query", template,
                            f"write its value where it stands (e.g. MOD(k, 2) = 0 for {template.sql()})")
        parts = [col.args.get(k) for k in ("db", "table")]
        qualifier = ".".join(ident_name(p) for p in parts if p is not None)
        if qualifier:
            item = next((i for i in items if i.alias == qualifier), None)
            if item is None:
                item = next((i for i in items if i.relation.name == qualifier and i.alias == qualifier.split(".")[-1]), None)
            if item is None:
                in_scope = ", ".join(i.alias for i in items)
                self.where.fail(f"unknown input '{qualifier}' in {qualifier}.{name}", col, f"inputs in scope here: {in_scope}")
            return self.column_of(item, name, col, f"{qualifier}.{name}")
        in_scope = {i.alias for i in items}
        merged = self.using_members.get(name, set()) if self.using_members.get(name, {"?"}) <= in_scope else set()
        if name == "rowtime" and output_rowtime and any(i.is_stream and not i.hidden for i in self.items):
            return OUTPUT_ROWTIME
        candidates = [
            i for i in items if (name in i.columns or (name == "rowtime" and i.is_stream)) and i.alias not in merged
            and not i.hidden
        ]
        if merged and not candidates:
            return self.using[name]
        if merged:
            names = " or ".join([to_sql(self.using[name])] + [f"{i.alias}.{name}" for i in candidates])
            self.where.fail(f"column '{name}' is ambiguous", col, f"qualify it: {names}")
        if not candidates:
            every = sorted({c for i in items for c in i.columns})
            close = difflib.get_close_matches(name, every, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"columns in scope: {', '.join(every)}"
            self.where.fail(f"unknown column '{name}'", col, hint)
        if len(candidates) > 1:
            names = " or ".join(f"{i.alias}.{name}" for i in candidates)
            self.where.fail(f"column '{name}' is ambiguous", col, f"qualify it: {names}")
        return self.column_of(candidates[0], name, col, name)

    def column_of(self, item: Item, name: str, col: exp.Column, shown: str) -> Ref:
        if name == "rowtime" and item.is_stream:
            return Ref(item.alias, item.relation.rowtime, True)
        if name not in item.columns:
            close = difflib.get_close_matches(name, item.columns, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"columns of {item.alias}: {', '.join(item.columns)}"
            self.where.fail(f"unknown column '{col.meta.get('written', shown)}'", col, hint)  # (as written: a subquery's)
        return Ref(item.alias, name, item.is_stream and name == item.relation.rowtime)

    def qualify(self, node: exp.Expression, items: list[Item] | None = None, output_rowtime: bool = False) -> exp.Expression:
        """A copy of node with every column resolved and qualified (against `items`, by default
        every item so far)."""
        items = self.items if items is None else items
        node = node.copy()
        for col in list(node.find_all(exp.Column)):
            if isinstance(col.this, exp.Star):
                continue
            if col.args.get("db") is not None and ident_name(col.args.get("table")) == "_value":
                # Lenses' value facet: `m._value.name` is the value's field `m.name`
                col.set("table", col.args["db"])
                col.set("db", None)
            fields: list[str] = []
            nested = self.nested(col, items)
            if nested is not None:  # `s.location.region`: the field `region` of the column `s.location`
                fields = nested[1]
                if col is node:
                    node = nested[0]
                else:
                    col.replace(nested[0])
                col = nested[0]
            target = self.resolve(col, items, output_rowtime)
            if target == OUTPUT_ROWTIME:
                replacement = exp.Column(this=exp.Identifier(this=OUTPUT_ROWTIME, quoted=False))
            elif isinstance(target, Ref):
                replacement = qualified(target)
            else:
                replacement = target.copy()  # a USING column's COALESCE (copies keep meta refs)
            offset = offset_of(col)
            if offset is not None:
                replacement.meta["offset"] = offset
            for name in fields:
                replacement = exp.Dot(this=replacement, expression=exp.to_identifier(name))
            if col is node:
                node = replacement
            else:
                col.replace(replacement)
        return integer_division(node, lambda alias, name: self.column_type(alias, name, items))

    def column_type(self, alias: str, name: str, items: list[Item]) -> str | None:
        """A qualified column's declared type (a view's: its expression's, plan.arithmetic)."""
        item = next((i for i in items if i.alias == alias), None)
        column = next((c for c in item.relation.columns if c.name == name), None) if item is not None else None
        return column.type if column is not None else None

    def nested(self, col: exp.Column, items: list[Item]) -> tuple[exp.Column, list[str]] | None:
        """A record's field written as a qualified name (Lenses, RisingWave): `a.col.f.g` where
        `a` is an input and `col` its column, or `col.f` where `col` is a column in scope and no
        input is called `col`. Returns (the column, the field path), or None for a plain column."""
        parts = [ident_name(col.args[k]) for k in ("catalog", "db", "table") if col.args.get(k) is not None]
        if not parts or ".".join(parts) in {i.alias for i in items} or \
                any(i.relation.name == ".".join(parts) for i in items):
            return None
        names = [*parts, ident_name(col.this)]
        offset = offset_of(col)
        by_alias = next((i for i in items if i.alias == names[0]), None)
        if by_alias is not None and len(names) >= 3 and names[1] in by_alias.columns:
            base, fields = exp.Column(this=ident(names[1]), table=ident(names[0])), names[2:]
        elif by_alias is None and any(names[0] in i.columns for i in items):
            base, fields = exp.Column(this=ident(names[0])), names[1:]
        else:
            return None
        if offset is not None:
            base.meta["offset"] = offset
        return base, fields

    def star(self, node: exp.Column | None, star: exp.Star | None = None) -> list[tuple[str, exp.Expression, str]]:
        """(name, expression, name if a star brings it twice) of each column `*` or `alias.*`
        selects, less those its EXCEPT (...) names (RisingWave, BigQuery)."""
        columns = self._star(node)
        if star is None:
            return columns
        for key in ("replace", "rename"):
            if star.args.get(key):
                self.where.fail(f"* {key.upper()} (...) is not supported", star, "select the columns by name, with AS")
        dropped: set[int] = set()
        for name in star.args.get("except_") or []:
            qualified_name = self.qualify(name.copy()).sql()
            found = {n for n, (_, expression, _) in enumerate(columns) if expression.sql() == qualified_name}
            if not found:
                self.where.fail(f"EXCEPT names {name.sql()}, which this * does not select", name, "name a column the star brings")
            dropped |= found
        return [c for n, c in enumerate(columns) if n not in dropped]

    def _star(self, node: exp.Column | None) -> list[tuple[str, exp.Expression, str]]:
        if node is not None:
            qualifier = ident_name(node.args.get("table"))
            items = [i for i in self.items if i.alias == qualifier]
            if not items:
                self.where.fail(f"unknown input '{qualifier}' in {qualifier}.*", node, f"inputs: {', '.join(i.alias for i in self.items)}")
            item = items[0]
            return [self.star_column(item, c) for c in star_columns(item)]
        out = [(name, self.using[name].copy(), name) for name in self.using_order]
        for item in self.items:
            for c in star_columns(item) if not item.hidden else ():
                if item.alias not in self.using_members.get(c, ()):
                    out.append(self.star_column(item, c))
        return out

    @staticmethod
    def star_column(item: Item, c: str) -> tuple[str, exp.Expression, str]:
        return c, qualified(Ref(item.alias, c, c == item.relation.rowtime)), f"{item.alias}.{c}"
