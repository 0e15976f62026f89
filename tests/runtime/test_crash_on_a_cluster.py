"""Issue 65 on a real cluster: a Spark standalone master with two workers (the virtualenv's Spark),
the query's driver started as `streamjoin run` against it and SIGKILLed the moment a new commit
appears in its Delta table's log (watched from outside, as an operator's failure would come: no
crash point armed), started again on its checkpoint and run to the end. The table holds exactly
what an uninterrupted run commits, and the workers lived through the driver's deaths."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cluster_helpers import StandaloneCluster
from crash_harness import Watch, run, uninterrupted
from test_crash_restart import delta_commits, kind


@pytest.mark.long
def test_a_driver_killed_as_a_delta_commit_lands_on_a_two_worker_cluster_restarts_with_every_row_once(spark, tmp_path, s3_server):
    cluster = StandaloneCluster(tmp_path / "cluster", workers=2).start()
    try:
        k = kind("native_delta", arrivals=9)
        expected = uninterrupted(k, tmp_path / "once", spark)  # the same query, in this process's local Spark
        on_cluster = replace(k, env={**k.env, "STREAMJOIN_SPARK_MASTER": cluster.url})
        kills = [Watch("the table's first commit", lambda root: delta_commits(root) >= 1),
                 Watch("its third commit", lambda root: delta_commits(root) >= 3)]
        outcome = run(on_cluster, tmp_path / "killed", kills)
        assert outcome.kills == [w.label for w in kills] and outcome.unreached == [], outcome
        assert len(expected) > 400 and outcome.committed == expected  # nothing missing, nothing twice
        assert cluster.workers_alive() == 2
        master = (tmp_path / "cluster" / "master.log").read_text()
        assert master.count("Registered app streamjoin") == 3  # each of the three drivers ran on the cluster,
        assert master.count("Launching executor") >= 6  # with an executor on each worker
    finally:
        cluster.stop()
