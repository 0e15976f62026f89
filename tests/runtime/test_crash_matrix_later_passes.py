"""The crash-point matrix's kills on a later pass (issue 65; the first passes and the slice:
test_crash_matrix.py): every pair at every point it passes, on the third pass, or the last when
its uninterrupted run passes the point twice only. A file of its own so that `make test-long`
runs the two halves of the matrix on two workers."""

from __future__ import annotations

import pytest
from crash_matrix import Uninterrupted, check, full

LATER = full("later")


@pytest.fixture(scope="module")
def uninterrupted(spark, tmp_path_factory):
    return Uninterrupted(spark, tmp_path_factory)


@pytest.mark.long
@pytest.mark.parametrize("engine,sink,kill", LATER, ids=["-".join(c) for c in LATER])
def test_the_whole_matrix_of_engines_sinks_and_crash_points_on_a_later_pass(spark, s3_server, kafka_broker,
                                                                             uninterrupted, tmp_path, engine, sink,
                                                                             kill):
    check(spark, uninterrupted, tmp_path, engine, sink, kill)
