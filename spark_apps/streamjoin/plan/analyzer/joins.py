"""The condition of one join, as written: the join type, `USING` / `NATURAL` columns (merged
into the scope), Lenses' `_key` joins and `WITHIN`, a CROSS join's WHERE, an ASOF inequality."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect import Within
from streamjoin.errors import SqlError
from streamjoin.plan.analyzer.names import Item, Scope, ident, qualified
from streamjoin.plan.conditions import Ref, conjuncts, refs_of
from streamjoin.plan.model import Asof, JoinType
from streamjoin.plan.scope import Located, interval_to_ms
from streamjoin.plan.windows import RangeWindow

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def is_comma(join: exp.Join) -> bool:
    return not (join.args.get("kind") or join.args.get("side") or join.args.get("method"))


def join_type(join: exp.Join) -> tuple[JoinType, bool, bool]:
    """(join type, NATURAL, ASOF) as written."""
    method = (join.text("method") or "").upper()
    side = (join.text("side") or "").upper()
    kind = (join.text("kind") or "").upper()
    if kind in ("SEMI", "ANTI"):  # Spark's and Hive's LEFT SEMI / LEFT ANTI JOIN; a subquery's (plan.analyzer.subqueries)
        written = JoinType.SEMI if kind == "SEMI" else JoinType.ANTI
    elif kind == "CROSS" or is_comma(join) and not join.args.get("on"):
        written = JoinType.CROSS
    elif side in ("LEFT", "RIGHT", "FULL"):
        written = JoinType(side)
    elif kind == "OUTER":
        written = JoinType.FULL  # Lenses: OUTER JOIN is the union of LEFT and RIGHT
    else:
        written = JoinType.INNER
    return written, method == "NATURAL", method == "ASOF"


def apply_within(where: Located, within: Within, left_items: list[Item], right: Item) -> None:
    """Lenses `WITHIN d`: both streams get `RANGE d PRECEDING` (SEMANTICS §3)."""
    ms = interval_to_ms(within.this, where)
    streams = [i for i in (*left_items, right) if i.is_stream]
    if len(streams) < 2:
        where.fail("WITHIN applies to a join of two streams", within, "a stream-table join needs no window")
    for item in streams:
        if item.window_source == "OVER":
            where.fail(f"'{item.alias}' has both an OVER window and WITHIN", within, "use one of them")
        if item.window == RangeWindow(ms) and item.window_source == "WITHIN":
            continue
        if item is not right and len(left_items) > 1:
            # an earlier join already matched with this input's window (§3: one window per input)
            where.fail(
                f"WITHIN here would change the window of '{item.alias}', which an earlier join already used",
                within,
                "give each input its window with OVER (RANGE INTERVAL '5' SECOND PRECEDING)",
            )
        item.window, item.window_source = RangeWindow(ms), "WITHIN"


def natural_columns(scope: Scope, left_items: list[Item], right: Item, join: exp.Join) -> list[str]:
    right_cols = [c for c in right.columns if c != right.relation.rowtime and c != "rowtime"]
    left_cols = [c for i in left_items for c in i.columns if c != i.relation.rowtime and c != "rowtime"]
    common = [c for c in right_cols if c in left_cols or c in scope.using]
    if not common:
        scope.where.fail("NATURAL JOIN: the inputs have no column in common", join, "write the condition with ON or USING")
    return common


def using_condition(scope: Scope, using: list[str], join: exp.Join, left_items: list[Item], right: Item) -> exp.Expression:
    """`l.c = r.c AND ...` for `USING (c, ...)`; each name becomes a merged column of the scope."""
    where = scope.where
    parts = []
    nodes = join.args.get("using") or []
    for i, name in enumerate(using):
        node = nodes[i] if i < len(nodes) else join
        if name not in right.columns:
            where.fail(f"USING column '{name}' is not a column of the right input '{right.alias}'", node, f"columns of {right.alias}: {', '.join(right.columns)}")
        left_ref = scope.using.get(name)
        members = scope.using_members.get(name, set())
        others = [i for i in left_items if name in i.columns and i.alias not in members]
        if left_ref is not None and others:
            where.fail(f"USING column '{name}' is ambiguous on the left", node, f"it is the merged USING column and a column of {', '.join(o.alias for o in others)}: use ON")
        if left_ref is None:
            owners = others
            if not owners:
                where.fail(f"USING column '{name}' is not a column of the left input", node, f"both sides need a column named {name}")
            if len(owners) > 1:
                where.fail(f"USING column '{name}' is ambiguous on the left", node, f"it is a column of {', '.join(o.alias for o in owners)}: use ON")
            left_ref = qualified(Ref(owners[0].alias, name, False))
            members = {owners[0].alias}
        scope.using_members[name] = members | {right.alias}
        right_ref = qualified(Ref(right.alias, name, False))
        parts.append(exp.EQ(this=left_ref.copy(), expression=right_ref.copy()))
        scope.using[name] = exp.Coalesce(this=left_ref.copy(), expressions=[right_ref.copy()])
        if name not in scope.using_order:
            scope.using_order.append(name)
    return _and(parts)


def key_condition(where: Located, left_items: list[Item], right: Item, join: exp.Join) -> exp.Expression:
    """Lenses: a join without ON between keyed inputs joins on _key."""
    keyed = [i for i in left_items if "_key" in i.columns]
    if "_key" in right.columns and len(keyed) == 1:
        return exp.EQ(
            this=exp.Column(this=exp.to_identifier("_key"), table=ident(keyed[0].alias)),
            expression=exp.Column(this=exp.to_identifier("_key"), table=ident(right.alias)),
        )
    where.fail("JOIN needs a condition: ON, USING or NATURAL", join, "write JOIN b ON a.k = b.k (CROSS JOIN pairs every row)")


def where_condition(scope: Scope, select: exp.Select, right: Item, left_aliases: set[str]) -> exp.Expression | None:
    """For a CROSS or comma join, the WHERE conjuncts that relate the new input to earlier
    ones. For inner pairs WHERE and ON agree (SEMANTICS §5), and as keys they keep the
    join an equi-join instead of a cross product."""
    where = select.args.get("where")
    found = []
    for part in conjuncts(where.this if where is not None else None):
        try:
            q = scope.qualify(part)
        except SqlError:
            continue  # refers to a later input or the output: stays in WHERE only
        refs = refs_of(q)
        if right.alias in refs and refs & left_aliases and refs <= left_aliases | {right.alias}:
            found.append(q)
    return _and(found) if found else None


def asof_condition(where: Located, condition, left_aliases: set[str], right: Item, join: exp.Join):
    """(the condition without its ASOF inequality, the inequality written `left OP right`)."""
    if condition is None:
        where.fail("ASOF JOIN needs ON with an equality and one inequality", join, "ON a.k = b.k AND b.t <= a.t")
    inequalities = []
    for part in conjuncts(condition):
        if isinstance(part, (exp.LT, exp.LTE, exp.GT, exp.GTE)):
            a, b = refs_of(part.this), refs_of(part.expression)
            if a and b and ((a <= left_aliases and b == {right.alias}) or (b <= left_aliases and a == {right.alias})):
                inequalities.append(part)
    if len(inequalities) != 1:
        where.fail("ASOF JOIN needs exactly one inequality between the two sides", condition, "e.g. ON a.k = b.k AND b.t <= a.t")
    part = inequalities[0]
    op = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}[type(part)]
    lhs, rhs = part.this, part.expression
    if refs_of(lhs) == {right.alias}:  # write it as left OP right
        lhs, rhs, op = rhs, lhs, _FLIP[op]
    rest = [p for p in conjuncts(condition) if p is not part]
    return (_and(rest) if rest else None), Asof(lhs.copy(), op, rhs.copy())


def _and(parts: list[exp.Expression]) -> exp.Expression:
    condition = parts[0]
    for p in parts[1:]:
        condition = exp.And(this=condition, expression=p)
    return condition
