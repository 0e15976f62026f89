"""The `streamjoin check` / `explain` contract: exit codes, stderr, formats."""

import json
import subprocess
import sys
from pathlib import Path

SEED = Path(__file__).parents[1] / "fixtures" / "seeds" / "s000_left_join.sql"


def streamjoin(*args):
    return subprocess.run([sys.executable, "-m", "streamjoin.cli", *args], capture_output=True, text=True)


def test_check_accepts_a_valid_file_with_exit_0():
    result = streamjoin("check", str(SEED))
    assert result.returncode == 0
    assert result.stdout == ""
    assert "ok (1 query, 1 join)" in result.stderr


def test_check_rejects_with_exit_2_and_file_line_col(tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE STREAM s (k INT);\nCREATE TABLE t (k INT);\nSELECT STREAM * FROM s\n  CROSS JOIN t ON s.k = t.k;\n")
    result = streamjoin("check", str(bad))
    assert result.returncode == 2
    first, hint = result.stderr.splitlines()
    assert first == f"{bad}:4:19: error: CROSS JOIN takes no ON or USING condition"
    assert hint.startswith("  hint: ")


def test_check_reports_a_missing_file_as_a_failure_with_exit_1(tmp_path):
    result = streamjoin("check", str(tmp_path / "missing.sql"))
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith("streamjoin: FileNotFoundError")


def test_explain_json_describes_each_join():
    result = streamjoin("explain", str(SEED), "--format", "json")
    assert result.returncode == 0
    plan = json.loads(result.stdout)
    [join] = plan["queries"][0]["joins"]
    assert join["join_type"] == "LEFT"
    assert join["kind"] == "stream-stream window join"
    assert join["condition"]["keys"] == [["oq.ticker", "sp.ticker"]]
    assert plan["queries"][0]["inputs"][0]["window"] == {"size_ms": 60000, "lag_ms": 0}


def test_explain_text_names_inputs_windows_keys_and_state():
    result = streamjoin("explain", str(SEED))
    assert result.returncode == 0
    text = result.stdout
    for expected in ("oq: stream", "RANGE 1 MINUTE PRECEDING", "keys: oq.ticker = sp.ticker", "state:", "emit: FINAL"):
        assert expected in text


def test_comments_anywhere_in_the_file_are_ignored(tmp_path):
    sql = tmp_path / "commented.sql"
    sql.write_text("-- header\nCREATE STREAM a (k INT); /* block */\nSELECT STREAM * FROM a; -- trailing\n")
    assert streamjoin("check", str(sql)).returncode == 0
