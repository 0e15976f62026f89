"""`run` reads CSV and Parquet as well as JSON, coalesces USING columns, runs interval joins,
and keeps its exit-code contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from runtime_helpers import BASE, run_until_idle, ts, write_jsonl

pytestmark = [pytest.mark.spark]  # `streamjoin run` processes and the session


def test_csv_and_parquet_inputs_full_join_using_a_coalesced_key(spark, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "a.csv").write_text(f"rowtime,k,x\n{ts(1000)},1,10\n{ts(2000)},2,20\n")
    (tmp_path / "b").mkdir()
    import datetime as dt

    pq.write_table(
        pa.table({"rowtime": pa.array([BASE.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=1)], pa.timestamp("us", tz="UTC")),
                  "k": pa.array([1], pa.int32()), "y": pa.array(["one"])}),
        tmp_path / "b" / "b.parquet",
    )
    sql = f"""CREATE STREAM a (k INT, x INT) WITH (connector = 'files', format = 'csv', path = '{tmp_path / "a"}');
CREATE STREAM b (k INT, y VARCHAR) WITH (connector = 'files', format = 'parquet', path = '{tmp_path / "b"}');
SELECT STREAM * FROM a OVER (RANGE INTERVAL '1' SECOND PRECEDING) FULL JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) USING (k);"""
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")
    assert rows == [{"k": 1, "x": 10, "y": "one"}, {"k": 2, "x": 20, "y": None}]


def test_risingwave_interval_join_matches_within_its_range(spark, tmp_path):
    write_jsonl(tmp_path / "s1" / "1.json", [{"ts": ts(t), "id": 1, "value": t} for t in (0, 30_000, 90_000)])
    write_jsonl(tmp_path / "s2" / "1.json", [{"ts": ts(20_000), "id": 1, "value": -1}])
    sql = f"""CREATE SOURCE s1 (id INT, value INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '20' SECOND) WITH (connector = 'files', format = 'json', path = '{tmp_path / "s1"}');
CREATE SOURCE s2 (id INT, value INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '20' SECOND) WITH (connector = 'files', format = 'json', path = '{tmp_path / "s2"}');
SELECT s1.value AS v1, s2.value AS v2 FROM s1 JOIN s2 ON s1.id = s2.id AND s1.ts BETWEEN s2.ts AND s2.ts + INTERVAL '1' MINUTE;"""
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")
    assert rows == [{"v1": 30_000, "v2": -1}]  # 0 s is before s2.ts, 90 s is more than a minute after


def cli(*args):
    return subprocess.run([sys.executable, "-m", "streamjoin.cli", "run", *map(str, args)], capture_output=True, text=True, timeout=300)


def test_run_rejects_what_it_cannot_run_yet_with_exit_2_before_starting_spark(tmp_path):
    query = tmp_path / "q.sql"
    query.write_text("CREATE STREAM a (k INT) WITH (path = '/nowhere'); CREATE TABLE t (k INT);\nSELECT STREAM * FROM a JOIN t USING (k);")
    result = cli(query, "--until-idle")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"{query}: error: table 't' needs WITH (path = '...') to be read"
    )


def test_run_fails_with_exit_1_and_a_one_line_reason_on_bad_data_when_the_stream_says_on_error_fail(tmp_path):
    write_jsonl(tmp_path / "a" / "1.json", [{"rowtime": ts(0), "k": "not a number"}])
    query = tmp_path / "q.sql"
    query.write_text(f"CREATE STREAM a (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'a'}', "
                     "on_error = 'fail');\nSELECT STREAM * FROM a;")
    result = cli(query, "--until-idle", "--checkpoint", tmp_path / "ck")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    reason = f'{tmp_path / "a" / "1.json"}:1: column k: "not a number" does not read as int32'
    assert last.startswith("streamjoin: ") and reason in last
    status = json.loads((tmp_path / "ck" / "status.json").read_text())  # what a supervisor reads
    assert status["state"] == "failed" and reason in status["error"]


def test_by_default_bad_data_is_set_aside_and_the_run_succeeds_saying_how_many_rows_it_rejected(tmp_path):
    write_jsonl(tmp_path / "a" / "1.json", [{"rowtime": ts(0), "k": "not a number"}, {"rowtime": ts(1), "k": 7}])
    query = tmp_path / "q.sql"
    query.write_text(f"CREATE STREAM a (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'a'}');\nSELECT STREAM * FROM a;")
    result = cli(query, "--until-idle", "--checkpoint", tmp_path / "ck")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [json.loads(line)["k"] for line in result.stdout.splitlines()] == [7]
    assert result.stderr.strip().splitlines()[-1].endswith(
        "1 rejected rows (rejected/ beside late/: file, line and reason each)")
    status = json.loads((tmp_path / "ck" / "status.json").read_text())
    assert status["state"] == "finished" and status["rejected_rows"] == 1
    (letter,) = (tmp_path / "ck" / "rejected" / "a").glob("rejected-*.jsonl")
    assert json.loads(letter.read_text())["line"] == 1


def leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("streamjoin-*"))


def test_a_run_without_checkpoint_leaves_no_temporary_folder_after_success_or_failure(tmp_path):
    temp = tmp_path / "tmp"  # the system temp folder of the run (tempfile follows TMPDIR)
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYSPARK_PYTHON": sys.executable}
    write_jsonl(tmp_path / "good" / "1.json", [{"rowtime": ts(0), "k": 1}])
    write_jsonl(tmp_path / "bad" / "1.json", [{"rowtime": ts(0), "k": "not a number"}])
    for name, code in (("good", 0), ("bad", 1)):
        query = tmp_path / f"{name}.sql"
        query.write_text(f"CREATE STREAM a (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / name}', "
                         "on_error = 'fail');\nSELECT STREAM * FROM a;")
        result = subprocess.run([sys.executable, "-m", "streamjoin.cli", "run", str(query), "--until-idle"],
                                capture_output=True, text=True, timeout=300, env=env)
        assert result.returncode == code, result.stderr[-2000:]
        assert leftovers(temp) == [], f"{name}: {result.stderr[-2000:]}"
        assert "temporary checkpoint" in result.stderr, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith("streamjoin: ")


def test_a_run_with_checkpoint_keeps_it_to_resume_from(tmp_path):
    write_jsonl(tmp_path / "a" / "1.json", [{"rowtime": ts(0), "k": 1}])
    query = tmp_path / "q.sql"
    query.write_text(f"CREATE STREAM a (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'a'}');\nSELECT STREAM * FROM a;")
    result = cli(query, "--until-idle", "--checkpoint", tmp_path / "ck")
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "ck" / "status.json").read_text())["state"] == "finished"
    assert "reached end of input" not in result.stderr
    assert "temporary checkpoint" not in result.stderr, result.stderr  # it is kept, not removed at exit
    # that run ended its input for good: a later file is not read, and the next run says so
    write_jsonl(tmp_path / "a" / "2.json", [{"rowtime": ts(1_000), "k": 2}])
    again = cli(query, "--until-idle", "--checkpoint", tmp_path / "ck")
    assert again.returncode == 0 and "warning: checkpoint" in again.stderr and "reached end of input" in again.stderr, again.stderr


def test_a_query_without_a_join_writes_its_rows_and_never_the_end_of_input_bound(spark, tmp_path):
    write_jsonl(tmp_path / "s" / "1.json", [{"rowtime": ts(t), "k": t // 1000} for t in (1_000, 2_000, 3_000)])
    source = f"CREATE STREAM s (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 's'}');\n"
    rows, _ = run_until_idle(spark, source + "SELECT STREAM k FROM s;", tmp_path / "plain")
    assert rows == [{"k": 1}, {"k": 2}, {"k": 3}]  # no {"k": null} for the bound that ends the input
    rows, _ = run_until_idle(spark, source + "SELECT STREAM ROWTIME, k FROM s WHERE k > 1;", tmp_path / "filtered")
    assert rows == [{"rowtime": ts(2_000), "k": 2}, {"rowtime": ts(3_000), "k": 3}]
