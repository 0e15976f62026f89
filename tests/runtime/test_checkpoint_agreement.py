"""A checkpoint whose parts disagree is refused before anything runs (issue 65): Spark's offset
and commit logs, the sink's record of the batches it took (`output/state.json`) and the sink's
table must tell one story, or resuming would skip rows as done, or write them twice, and exit 0.
The error names both sides; nothing is run or written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from runtime_helpers import run_to_end, start, write_jsonl
from streamjoin.io.sinks.ordered_sink import OrderedSink
from streamjoin.runtime.checkpoint import CheckpointMismatch, logged_batches


def checkpoint(root: Path, offsets: int | None, commits: int | None, sink_batch: int | None) -> OrderedSink:
    """A checkpoint whose Spark logs end at these batches and whose sink recorded batches up to `sink_batch`."""
    for log, last in (("offsets", offsets), ("commits", commits)):
        (root / "spark" / log).mkdir(parents=True, exist_ok=True)
        for n in range(0 if last is None else last + 1):
            (root / "spark" / log / str(n)).write_text("v1\n")
    (root / "spark" / "offsets" / ".3.tmp").write_text("")  # not a batch
    sink = OrderedSink(root, None, ["k"], 0)
    if sink_batch is not None:
        (root / "output" / "state.json").write_text(json.dumps({"last_batch": sink_batch}))
    return sink


@pytest.mark.parametrize("offsets,commits,sink_batch", [
    (None, None, None),  # nothing ran
    (0, None, None),  # killed in batch 0 before the sink recorded it
    (0, None, 0),  # killed after the sink recorded batch 0, before Spark logged it done
    (4, 3, 3),  # killed in batch 4 before the sink recorded it
    (4, 3, 4),  # killed after the sink recorded batch 4 (sink.after_batch)
    (4, 4, 4),  # stopped between batches
])
def test_the_states_a_kill_leaves_are_resumed(tmp_path, offsets, commits, sink_batch):
    sink = checkpoint(tmp_path, offsets, commits, sink_batch)
    assert logged_batches(tmp_path) == (offsets, commits)
    sink.check_batches(*logged_batches(tmp_path))


def test_a_sink_record_behind_sparks_commit_log_is_refused_naming_both(tmp_path):
    # the output folder restored from an older copy (or removed): batches 3-4 are done for Spark, unwritten
    sink = checkpoint(tmp_path, 4, 4, 2)
    with pytest.raises(CheckpointMismatch) as refused:
        sink.check_batches(*logged_batches(tmp_path))
    text = str(refused.value)
    assert "commit log" in text and str(tmp_path / "spark" / "commits") in text and "up to 4" in text
    assert str(tmp_path / "output" / "state.json") in text and "ends at batch 2" in text
    assert "batches 3 to 4 were never written" in text and "Nothing was run or written" in text
    with pytest.raises(CheckpointMismatch, match="holds none"):
        checkpoint(tmp_path / "lost", 4, 4, None).check_batches(*logged_batches(tmp_path / "lost"))


def test_a_sink_record_ahead_of_sparks_offset_log_is_refused(tmp_path):
    # Spark's folder restored from an older copy, or removed: new batches would be numbered as recorded ones
    sink = checkpoint(tmp_path, 2, 1, 5)
    with pytest.raises(CheckpointMismatch, match=r"up to 5, but Spark's offset log .* ends at batch 2"):
        sink.check_batches(*logged_batches(tmp_path))
    gone = checkpoint(tmp_path / "gone", None, None, 5)
    with pytest.raises(CheckpointMismatch, match="offset log .* holds none"):
        gone.check_batches(*logged_batches(tmp_path / "gone"))


SQL = """CREATE STREAM a (k INT, x INT) WITH (connector = 'files', format = 'json', path = '{root}/a');
CREATE SINK out WITH (connector = 's3', path = '{sink}', format = '{fmt}');
INSERT INTO out SELECT STREAM ROWTIME, a.k, a.x FROM a;
"""


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_an_older_copy_of_a_checkpoint_beside_a_newer_table_is_refused_and_nothing_is_written(spark, tmp_path, s3_prefix, fmt):
    from streamjoin.io.sinks.table_sink import DeltaCommitter, ManifestCommitter, SinkSpec
    from streamjoin.io.storage.s3 import S3Settings

    sql = SQL.format(root=tmp_path, sink=f"{s3_prefix}/out", fmt=fmt)
    write_jsonl(tmp_path / "a" / "1.json", [{"rowtime": "2024-01-01 00:00:01", "k": 1, "x": 1}])
    runner = start(spark, sql, tmp_path / "run")
    runner.process_available()
    runner.stop("stopped")
    shutil.copytree(tmp_path / "run" / "checkpoint", tmp_path / "copy")  # a backup of the checkpoint
    for n in (2, 3):  # two more batches committed after it
        write_jsonl(tmp_path / "a" / f"{n}.json", [{"rowtime": f"2024-01-01 00:00:0{n}", "k": n, "x": n}])
        runner = start(spark, sql, tmp_path / "run")
        runner.process_available()
        runner.stop("stopped")
    app_id = json.loads((tmp_path / "run" / "checkpoint" / "sink.json").read_text())["app_id"]
    kind = DeltaCommitter if fmt == "delta" else ManifestCommitter
    committer = kind(SinkSpec("out", f"{s3_prefix}/out", fmt, None), app_id, S3Settings.from_env())
    newest = committer.committed_version()
    shutil.rmtree(tmp_path / "run" / "checkpoint")
    shutil.copytree(tmp_path / "copy", tmp_path / "run" / "checkpoint")  # the backup restored
    from streamjoin.runtime.pipeline import Pipeline

    runner = Pipeline.from_sql(sql, "q.sql").runner(spark, tmp_path / "run" / "checkpoint", str(tmp_path / "run" / "out"))
    with pytest.raises(CheckpointMismatch) as refused:
        runner.start()
    text = str(refused.value)
    assert f"up to version {newest}" in text and "offset log" in text and "older than the table" in text
    assert runner.query is None and committer.committed_version() == newest  # nothing ran, nothing was written
    run_to_end(start(spark, sql, tmp_path / "again"))  # a new checkpoint takes every row again


def test_the_crash_points_are_documented_and_the_matrix_reaches_each():
    from crash_matrix import ENGINES, SINKS, pairs, points
    from streamjoin.faults import POINTS

    reliability = (Path(__file__).parents[2] / "docs" / "reliability.md").read_text()
    assert all(f"`{name}`" in reliability for name in POINTS)
    reached = {p for e, s in pairs() for p in points(ENGINES[e], SINKS[s])}
    assert reached == set(POINTS) - {"app.restarting"}  # (an app's snapshot refresh: tests/apps/test_app_operations.py)
