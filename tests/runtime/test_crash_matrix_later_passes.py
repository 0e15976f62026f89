"""The crash-point matrix's kills on a later pass (issue 65; the first passes: test_crash_matrix.py):
every pair at every point it passes, on the third pass, or the last when its uninterrupted run
passes the point twice only; and the second half of make test's slice. A file of its own so that
the two halves of the matrix, and of the slice, run on two workers (a file a worker)."""

from __future__ import annotations

import pytest
from crash_matrix import SLICE, check, full

LATER = full("later")
HALF = SLICE[1::2]


@pytest.mark.parametrize("engine,sink,kill", HALF, ids=["-".join(c) for c in HALF])
def test_a_run_killed_at_a_crash_point_and_started_again_ends_with_every_row_once(
        spark, s3_server, kafka_broker, uninterrupted_short, tmp_path, engine, sink, kill):
    check(spark, uninterrupted_short, tmp_path, engine, sink, kill)


@pytest.mark.long
@pytest.mark.parametrize("engine,sink,kill", LATER, ids=["-".join(c) for c in LATER])
def test_the_whole_matrix_of_engines_sinks_and_crash_points_on_a_later_pass(spark, s3_server, kafka_broker,
                                                                             uninterrupted, tmp_path, engine, sink,
                                                                             kill):
    check(spark, uninterrupted, tmp_path, engine, sink, kill)
