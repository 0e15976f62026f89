"""A join input's `OVER (...)` or `OVER w` as a window of SEMANTICS.md §3 (RANGE, ROWS, bucket),
or an error at the part of the window that §3 does not allow."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.scope import Located, ident_name, interval_to_ms
from streamjoin.plan.windows import BUCKET_UNITS, CURRENT_ROW, BucketWindow, RangeWindow, RowsWindow, UnboundedWindow


class WindowSpecs:
    """Reads the windows of one SELECT; `named` are its `WINDOW name AS (...)` definitions."""

    def __init__(self, where: Located, named: dict[str, exp.Window]):
        self.where, self.named = where, named

    def window(self, node: exp.Window, rowtime: str | None):
        spec_node = node
        if node.args.get("alias") is not None and node.args.get("spec") is None and node.args.get("order") is None:
            name = ident_name(node.args["alias"])
            if name not in self.named:
                self.where.fail(f"unknown window '{name}'", node, f"define it: WINDOW {name} AS (RANGE INTERVAL '1' MINUTE PRECEDING)")
            spec_node = self.named[name]
        for p in spec_node.args.get("partition_by") or []:
            if isinstance(p, exp.Anonymous) and p.name.upper() == "SESSION":
                self.where.fail("session windows (PARTITION BY SESSION ON ... TIMEOUT AFTER ...) are not supported in "
                                "a join", p, "join within a time range instead: OVER (RANGE INTERVAL '1' HOUR PRECEDING)")
        partition = tuple(_column(p) for p in spec_node.args.get("partition_by") or [])
        order = spec_node.args.get("order")
        spec = spec_node.args.get("spec")
        if order is not None:
            return self.bucket(order, spec, node, rowtime)
        if spec is None:
            self.where.fail("a join window needs RANGE or ROWS", node, "e.g. OVER (RANGE INTERVAL '1' MINUTE PRECEDING)")
        kind = spec.text("kind").upper()
        start, start_side = spec.args.get("start"), (spec.text("start_side") or "").upper()
        end, end_side = spec.args.get("end"), (spec.text("end_side") or "").upper()
        if "UNBOUNDED" in (str(start).upper(), str(end).upper()):
            if str(start).upper() != "UNBOUNDED" or start_side != "PRECEDING" or not (end is None or _is_current_row(end)):
                self.where.fail("an UNBOUNDED window on a join input is UNBOUNDED PRECEDING", node,
                                "OVER (RANGE UNBOUNDED PRECEDING) on both inputs: a regular join")
            return UnboundedWindow()  # both inputs of its join must have one (QueryAnalysis.join)
        if "FOLLOWING" in (start_side, end_side) and not _is_zero(end):
            self.where.fail("FOLLOWING is not supported in a join window", spec, "a join window looks back: RANGE INTERVAL '1' MINUTE PRECEDING")
        if kind == "ROWS":
            return self.rows_window(spec, start, end, partition)
        if kind == "RANGE":
            return self.range_window(spec, start, end)
        self.where.fail(f"unsupported window kind {kind}", spec, "use RANGE or ROWS")

    def rows_window(self, spec, start, end, partition) -> RowsWindow:
        count = self.row_count(start, spec)
        if end is not None and not _is_current_row(end) and not _is_zero(end):
            self.where.fail("ROWS BETWEEN n PRECEDING AND m PRECEDING is not supported", spec, "use ROWS n PRECEDING or ROWS BETWEEN n PRECEDING AND CURRENT ROW")
        return RowsWindow(count, partition)

    def row_count(self, start, spec) -> int:
        if _is_current_row(start):
            return 0
        if isinstance(start, exp.Neg) or (isinstance(start, exp.Literal) and start.is_number and int(float(start.name)) < 0):
            self.where.fail("ROWS needs a non-negative row count", start, "e.g. ROWS 5 PRECEDING")
        if not (isinstance(start, exp.Literal) and start.is_number and float(start.name).is_integer()):
            self.where.fail("ROWS needs a whole number of rows", start if start is not None else spec, "e.g. ROWS 5 PRECEDING")
        return int(start.name)

    def range_window(self, spec, start, end) -> RangeWindow:
        if _is_current_row(start) and (end is None or _is_current_row(end)):
            return CURRENT_ROW
        size = self.range_bound(start, spec)
        if end is None or _is_current_row(end):
            return RangeWindow(size)
        lag = self.range_bound(end, spec)
        if lag > size:
            self.where.fail("RANGE BETWEEN a AND b PRECEDING needs a >= b", spec, "the first interval is the far end of the window")
        return RangeWindow(size, lag)

    def range_bound(self, node, spec) -> int:
        if not isinstance(node, exp.Interval):
            self.where.fail("a RANGE window is measured in time: use an INTERVAL", node if node is not None else spec, "e.g. RANGE INTERVAL '1' MINUTE PRECEDING")
        ms = interval_to_ms(node, self.where)
        if ms < 0:
            self.where.fail("a RANGE window needs a non-negative interval", node, "e.g. RANGE INTERVAL '1' MINUTE PRECEDING")
        return ms

    def bucket(self, order: exp.Order, spec, node, rowtime: str | None) -> BucketWindow:
        keys = order.expressions
        floor = keys[0].this if len(keys) == 1 else None
        unit = floor.text("to").upper() if isinstance(floor, exp.Floor) and floor.args.get("to") else None
        on_rowtime = isinstance(floor, exp.Floor) and ident_name(floor.this) in ("rowtime", rowtime)
        if not unit or not on_rowtime or unit not in BUCKET_UNITS:
            self.where.fail("ORDER BY in a join window must be FLOOR(ROWTIME TO unit)", order, "e.g. OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW)")
        if spec is not None and not (_is_current_row(spec.args.get("start")) and spec.text("kind").upper() == "RANGE"):
            self.where.fail("a bucket window is ORDER BY FLOOR(ROWTIME TO unit) RANGE CURRENT ROW", node, "other frames over a bucket are not supported")
        return BucketWindow(unit)


def _column(node: exp.Expression) -> str:
    return ident_name(node.this if isinstance(node, exp.Column) else node)


def _is_current_row(node) -> bool:
    return node is not None and (node == "CURRENT ROW" or (isinstance(node, (str, exp.Var)) and str(getattr(node, "name", node)).upper() == "CURRENT ROW"))


def _is_zero(node) -> bool:
    return isinstance(node, exp.Literal) and node.is_number and float(node.name) == 0
