"""Rewrites of the plan: pure `Script -> Script` functions, applied once, in this order, by
`streamjoin.plan.compile` (so every later layer sees the same plan, and none re-applies one).

0. `script_time`: a process-time temporal join over rows the file inserts, updates and deletes
   reads the table as it stood at each row's statement (the script's clock).
1. `push_table_filters`: conjuncts on one table input alone move below its snapshot.
2. `changelog_join`: a stream joined with a `SELECT TABLE` view over a stream becomes a
   changelog join of the two streams (it takes the table's pushed filters back as conditions).
"""

from streamjoin.plan.rewrites.changelog import changelog_join
from streamjoin.plan.rewrites.script_time import script_time
from streamjoin.plan.rewrites.table_filters import push_table_filters

REWRITES = (script_time, push_table_filters, changelog_join)

__all__ = ["REWRITES", "changelog_join", "push_table_filters", "script_time"]
