"""What ran a checkpoint's query before (runtime.checkpoint.ran_on): a resumed query keeps that
operator, whatever a new run's options would pick (the other would join its input again)."""

from __future__ import annotations

import json

from streamjoin.runtime.checkpoint import ran_on
from streamjoin.runtime.pipeline import Pipeline

CHAIN = "".join(f"CREATE STREAM {s} (k INT) WITH (connector = 'files', path = '/{s}');" for s in "abc") + (
    "SELECT STREAM a.k FROM a OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a "
    "JOIN b OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS b ON a.k = b.k JOIN c ON b.k = c.k;")


def test_a_checkpoint_is_owned_by_spark_once_its_offsets_exist_by_the_batch_join_once_it_joined_a_step(tmp_path):
    fresh, spark, batch = tmp_path / "fresh", tmp_path / "spark", tmp_path / "batch"
    assert ran_on(fresh) is None
    (spark / "spark" / "offsets").mkdir(parents=True)
    (spark / "spark" / "offsets" / ".0.tmp").write_text("{}")  # a write a kill cut off is not progress
    assert ran_on(spark) is None
    (spark / "spark" / "offsets" / "0").write_text("{}")
    assert ran_on(spark) == "spark"
    (batch / "output").mkdir(parents=True)
    (batch / "output" / "state.json").write_text(json.dumps({"last_batch": 0, "join": None}))
    assert ran_on(batch) is None
    (batch / "output" / "state.json").write_text(json.dumps({"last_batch": 1, "join": {"done": [1, 0, 0]}}))
    assert ran_on(batch) == "batch"


def test_a_bounded_run_resuming_a_checkpoint_spark_ran_keeps_sparks_joins_and_a_live_one_the_batch_join(tmp_path, monkeypatch):
    from streamjoin.lower.physical import Engine

    seen = []
    monkeypatch.setattr("streamjoin.lower.lower", lambda spark, script, plan, specs, checkpoint, options: seen.append(
        plan.engine == Engine.BATCH))
    pipeline = Pipeline.from_sql(CHAIN)
    new = tmp_path / "new"
    pipeline.lower(None, new, tmp_path / "late", until_idle=True)
    pipeline.lower(None, new, tmp_path / "late", until_idle=False)
    assert seen == [True, False]  # a new checkpoint: bounded on the batch join, live on Spark's joins
    spark = tmp_path / "spark"
    (spark / "spark" / "offsets").mkdir(parents=True)
    (spark / "spark" / "offsets" / "3").write_text("{}")
    batch = tmp_path / "batch"
    (batch / "output").mkdir(parents=True)
    (batch / "output" / "state.json").write_text(json.dumps({"join": {"done": [1, 1, 1]}}))
    seen.clear()
    pipeline.lower(None, spark, tmp_path / "late", until_idle=True)
    pipeline.lower(None, batch, tmp_path / "late", until_idle=False)
    assert seen == [False, True]
