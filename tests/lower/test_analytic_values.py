"""The windowed aggregates' two ways of computing a partition's values (lower.analytic): numpy
and pandas' rolling windows for the common frames, one row at a time for the rest. On random
rows (shared rowtimes, NULLs, retained rows before the new ones) they give the same values."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from streamjoin.lower.analytic import Spec, row_by_row, vectorized

FUNCTIONS = ["COUNT", "SUM", "AVG", "MIN", "MAX", "STDDEV_SAMP", "STDDEV_POP", "VAR_SAMP", "VAR_POP", "FIRST_VALUE",
             "LAST_VALUE", "NTH_VALUE", "LAG"]
FRAMES = [("range", 7_000_000), ("range", 1), ("rows", 0), ("rows", 3), ("unbounded", 0)]


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))


@pytest.mark.parametrize("frame", FRAMES, ids=[f"{k}{n}" for k, n in FRAMES])
@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_vectorized_values_equal_the_row_by_row_ones(function, frame):
    rng = random.Random(f"{function}{frame}")
    for _ in range(20):
        count = rng.randint(1, 40)
        times = np.cumsum([rng.choice([0, 0, 1_000_000, 3_000_000]) for _ in range(count)]).astype("int64")
        ints = [rng.choice([None, *range(-4, 9)]) for _ in range(count)]
        argument = pd.Series([float("nan") if v is None else float(v) for v in ints])  # as Arrow gives an INT with NULLs
        defaults = pd.Series([-1] * count)
        first = rng.randint(0, count - 1)  # the rows before it were retained by earlier micro-batches
        for star in (False, True) if function == "COUNT" else (False,):
            spec = Spec(function, star, frame[0], frame[1], 0, rng.randint(1, 3), rng.random() < 0.5, False,
                         function == "LAG", numeric=True, integral=True)
            fast = vectorized(spec, times, argument, defaults if function == "LAG" else None, first)
            slow = row_by_row(spec, times, argument, defaults if function == "LAG" else None, first)
            assert fast is not None
            assert len(fast) == len(slow) and all(_close(a, b) for a, b in zip(fast, slow, strict=True)), (spec, fast, slow)
