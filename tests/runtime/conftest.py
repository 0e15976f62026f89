"""The crash-point matrix's uninterrupted runs, made once per test module (tests/crash_matrix.py)."""

import pytest
from crash_matrix import SLICE_ARRIVALS, Uninterrupted


@pytest.fixture(scope="module")
def uninterrupted(spark, tmp_path_factory):
    return Uninterrupted(spark, tmp_path_factory)


@pytest.fixture(scope="module")
def uninterrupted_short(spark, tmp_path_factory):
    return Uninterrupted(spark, tmp_path_factory, SLICE_ARRIVALS)
