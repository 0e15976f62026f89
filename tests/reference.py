"""A plain-Python reference of SEMANTICS.md §3-§5 for RANGE windows (EMIT FINAL results).

Each stream row is present over the instants [t + lag, t + size] (§3, §4 "Precisely" at the
granularity of instants). A left-deep join chain keeps, for every composite row, the
intersection of its non-null rows' presence intervals; a pair matches when the condition
holds and the intervals meet. Outer joins add the unmatched rows NULL-extended (§5). The
output rowtime is the start of the composite's interval: the latest presence start (§4).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Stream:
    alias: str
    rows: list[dict]  # each with "rowtime" (an int, ms) and the columns
    size_ms: int
    lag_ms: int = 0


@dataclass(frozen=True)
class JoinStep:
    right: Stream
    join_type: str  # INNER | LEFT | RIGHT | FULL | CROSS
    condition: Callable[[dict], bool]  # over {alias: row or None}


Composite = tuple[dict, tuple[int, int]]  # ({alias: row or None}, presence interval)


def presence(stream: Stream, row: dict) -> tuple[int, int]:
    return row["rowtime"] + stream.lag_ms, row["rowtime"] + stream.size_ms


def join_chain(first: Stream, steps: list[JoinStep]) -> list[Composite]:
    aliases = [first.alias]
    current: list[Composite] = [({first.alias: r}, presence(first, r)) for r in first.rows]
    for step in steps:
        right = step.right
        out: list[Composite] = []
        right_matched = [False] * len(right.rows)
        for combo, (ls, le) in current:
            matched = False
            for k, r in enumerate(right.rows):
                rs, re_ = presence(right, r)
                start, end = max(ls, rs), min(le, re_)
                if start > end:
                    continue
                candidate = {**combo, right.alias: r}
                if step.join_type != "CROSS" and not step.condition(candidate):
                    continue
                out.append((candidate, (start, end)))
                matched = right_matched[k] = True
            if not matched and step.join_type in ("LEFT", "FULL"):
                out.append(({**combo, right.alias: None}, (ls, le)))
        if step.join_type in ("RIGHT", "FULL"):
            for k, r in enumerate(right.rows):
                if not right_matched[k]:
                    out.append(({**{a: None for a in aliases}, right.alias: r}, presence(right, r)))
        aliases.append(right.alias)
        current = out
    return current


def results(first: Stream, steps: list[JoinStep], project: Callable[[dict], tuple]) -> Counter:
    """The multiset of (rowtime, projected values) the query produces."""
    return Counter((interval[0], *project(combo)) for combo, interval in join_chain(first, steps))
