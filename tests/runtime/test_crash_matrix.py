"""Killed at any crash point and started again on its checkpoint, a query ends with exactly what an
uninterrupted run of the same input has: nothing lost, nothing doubled, and the restart ends
without an error (issue 65). Every engine a join runs on, into every sink it can write, at every
point its run passes (`crash_matrix.points`), on the first pass and on a later one; the kill
simulated in this process (tests/crash_matrix.py). `make test` runs a slice: each engine and each
sink at least once, every S3 sink at `sink.after_commit`; `make test-long` runs the whole matrix
(its later passes in test_crash_matrix_later_passes.py)."""

from __future__ import annotations

import pytest
from crash_matrix import ENGINES, SINKS, SLICE, check, full, pairs, points

HALF = SLICE[::2]  # the other half: test_crash_matrix_later_passes.py (a file a worker)
# the whole matrix, first passes (later passes: test_crash_matrix_later_passes.py, on the other worker)
FULL = full("1")


@pytest.mark.parametrize("engine,sink,kill", HALF, ids=["-".join(c) for c in HALF])
def test_a_run_killed_at_a_crash_point_and_started_again_ends_with_every_row_once(
        spark, s3_server, kafka_broker, uninterrupted_short, tmp_path, engine, sink, kill):
    check(spark, uninterrupted_short, tmp_path, engine, sink, kill)


def test_the_slice_takes_every_engine_and_every_sink_and_every_s3_sink_at_its_commit():
    assert {e for e, _, _ in SLICE} == set(ENGINES) and {s for _, s, _ in SLICE} == set(SINKS)
    assert all((e, s) in pairs() and k.split(":")[0] in points(ENGINES[e], SINKS[s]) for e, s, k in SLICE)
    assert {s for _, s, k in SLICE if k.startswith("sink.after_commit")} == {"delta", "parquet", "upsert"}


@pytest.mark.long
@pytest.mark.parametrize("engine,sink,kill", FULL, ids=["-".join(c) for c in FULL])
def test_the_whole_matrix_of_engines_sinks_and_crash_points_on_their_first_pass(spark, s3_server, kafka_broker,
                                                                                 uninterrupted, tmp_path, engine, sink,
                                                                                 kill):
    check(spark, uninterrupted, tmp_path, engine, sink, kill)
