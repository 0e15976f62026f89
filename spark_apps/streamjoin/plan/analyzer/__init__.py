"""The analyzer: parsed statements -> a logical plan (`streamjoin.plan.model`).

It resolves names, expands USING / NATURAL / `*`, classifies inputs (stream or table) and
joins (SEMANTICS.md §4-§8), derives each input's window (§3) and rejects what §5, §7 and §9
forbid, with the position of the offending construct.

- `statements`: declarations, views, the final query;
- `query`: one SELECT (FROM items, joins in order, select list, WHERE, GROUP BY);
- `names`: FROM items and name resolution; `window_specs`: OVER (...) as §3 windows;
- `joins`: a join's condition as written; `classify`: its kind and the rules of that kind.
"""

from streamjoin.plan.analyzer.statements import Analyzer, analyze

__all__ = ["Analyzer", "analyze"]
