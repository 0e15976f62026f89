"""Shared by the column engines' tests (tests/operator): events on a coarse grid of rowtimes with
NULL keys, the union frame pandas hands the operator, and random steps of arrivals and clocks."""

from __future__ import annotations

import random

import pandas as pd
from streamjoin.operator.group import INF

KEYS = ["sj_k0", "sj_k1"]
COLUMNS = (["l_id", "l_k", "l_c"], ["r_id", "r_k", "r_c"])


def events(rng: random.Random, n: int) -> list[tuple]:
    """(t, side, seq, k, c): rowtimes on a coarse grid (ties within and across sides), NULL keys."""
    out = []
    for seq in range(n):
        k = rng.choice([1, 2, 3, None])
        out.append((rng.randrange(0, 12) * 1000, rng.randrange(2), seq, k, rng.choice(["a", "b"])))
    return out


def batch(rows: list[tuple]) -> pd.DataFrame:
    """The union as pandas hands it over: the other side's columns NULL, so integers with NULLs as floats."""
    data = {"sj_side": [], "sj_t": [], "sj_seq": [], **{k: [] for k in KEYS}, **{c: [] for side in COLUMNS for c in side}}
    for t, side, seq, k, c in rows:
        data["sj_side"].append(side)
        data["sj_t"].append(t)
        data["sj_seq"].append(seq)
        data["sj_k0"].append(k)
        data["sj_k1"].append(c)
        for n, names in enumerate(COLUMNS):
            mine = n == side
            data[names[0]].append(seq if mine else None)
            data[names[1]].append(k if mine else None)
            data[names[2]].append(c if mine else None)
    frame = pd.DataFrame(data)
    for name in ("sj_k0", "l_id", "l_k", "r_id", "r_k"):
        frame[name] = frame[name].astype("float64")
    return frame


def steps_of(rng: random.Random, rows: list[tuple]) -> list[tuple[list[tuple], float]]:
    """Rows arrive in random batches; the clock never passes a row not yet arrived; then the end."""
    steps, clock = [], -1
    while rows:
        n = rng.randrange(1, 12)
        now, rows = rows[:n], rows[n:]
        clock = max(clock, min((r[0] for r in now + rows), default=clock) - rng.choice([0, 1000, 2000]) - 1)
        steps.append((now, clock))
    steps.append(([], INF))
    return steps
