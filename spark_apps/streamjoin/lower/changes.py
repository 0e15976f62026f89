"""Changelogs that feed other operators: a GROUP BY without a time bucket over regular joins or
over a table that changes (the operator's +I / -D rows move the groups: `lower.running`'s signed
accumulators), and a running aggregate's (or regular joins') view read by another query: its part writes its
changelog as a table fed by its changes (io.sources.changelog's CHANGE, '+' the group's row as it is now,
'-' the group gone), keyed by its groups (plan `Query.changelog_key`), which its reader joins or
groups as it does a Debezium table (docs/semantics-decisions.md, "Views whose rows change")."""

from __future__ import annotations

from streamjoin.io.formats.columns import OP
from streamjoin.io.sources.changelog import CHANGE
from streamjoin.lower.physical import PhysicalPlan, changing_keys
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.plan.model import Query, Script


def running_changes(spark, script: Script, plan: PhysicalPlan, specs: dict, options: LoweringOptions):
    """A GROUP BY without a time bucket over regular joins (`lower.running` after `lower.custom`),
    the query `plan` (lower.physical.PhysicalPlan) runs: each joined row added (+I) or withdrawn
    (-D) moves its group, in one streaming query (the operator, then the groups' state)."""
    from pyspark.sql import functions as F

    from streamjoin.lower.columns import ET_COLUMN, ROWTIME_COLUMN
    from streamjoin.lower.custom import custom_joined
    from streamjoin.lower.running import running_frame

    query = plan.source
    joined = custom_joined(spark, plan, specs, options, changing_keys(script, query))
    rows = joined.where(~F.col("__meta")).withColumn("__sign", F.when(F.col("__op") == "-D", -1).otherwise(1))
    return running_frame(rows, query, ROWTIME_COLUMN, sign="__sign", windows=False).drop(ET_COLUMN)


def table_changes(frame, view: Query) -> tuple[object, list[str]]:
    """A running aggregate's changelog (OP +I / -D, its output, its hidden keys) as a table's
    changes: CHANGE '+' for a group's row as it is now, '-' for a group's row withdrawn (a -D
    that a +I of the same group follows is replaced by it: the reader keeps one row per key).
    Regular joins' changelog the same way, their rows without a key (plan.model.ROWS): a '-'
    withdraws a row equal to it.
    The frame and the columns it writes beyond the output: the hidden keys, then CHANGE."""
    from pyspark.sql import functions as F

    from streamjoin.lower.running import hidden_keys

    hidden = hidden_keys(view)
    frame = frame.withColumn(CHANGE, F.when(F.col(OP) == "-D", F.lit("-")).otherwise(F.lit("+"))).drop(OP)
    return frame, [*hidden, CHANGE]
