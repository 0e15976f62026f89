"""Rewrites of the plan: pure `Script -> Script` functions, applied once, in this order, by
`streamjoin.plan.compile` (so every later layer sees the same plan, and none re-applies one).

1. `push_table_filters`: conjuncts on one table input alone move below its snapshot.
2. `changelog_join`: a stream joined with a `SELECT TABLE` view over a stream becomes a
   changelog join of the two streams (it takes the table's pushed filters back as conditions).
"""

from streamjoin.plan.rewrites.changelog import changelog_join
from streamjoin.plan.rewrites.table_filters import push_table_filters

REWRITES = (push_table_filters, changelog_join)

__all__ = ["REWRITES", "changelog_join", "push_table_filters"]
