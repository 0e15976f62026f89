"""No secret in any log, status file, report or other file the demo pipeline writes (issue 20).

The demo runs end to end (`include/demo.py --data DIR`: embedded S3, the enrichment app under
spark-submit, a snapshot refresh, `airflow dags test` of the hourly report) with marker values for
every credential it can be given: the S3 keys its clients get, an SMTP password and an alert webhook
URL. Then every file it wrote, and everything it printed, is searched for the markers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKERS = {
    "STREAMJOIN_S3_ACCESS_KEY": "AKIAMARKERQ3ZK7",
    "STREAMJOIN_S3_SECRET_KEY": "marker-s3-secret-5d1c9e",
    "STREAMJOIN_SMTP_PASSWORD": "marker-smtp-password-88a1",
    "STREAMJOIN_ALERT_WEBHOOK_URL": "http://127.0.0.1:9/hooks/marker-webhook-token-3b7",
}


@pytest.mark.long  # the whole demo (~4 min)
@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.s3
def test_the_demo_pipeline_writes_no_secret_to_any_log_status_file_report_or_output(tmp_path):
    began = time.time()
    env = {**os.environ, **MARKERS, "STREAMJOIN_SMTP_HOST": "127.0.0.1", "STREAMJOIN_SMTP_PORT": "9",
           "STREAMJOIN_ALERT_EMAIL_TO": "ops@example.com"}
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, str(ROOT / "include" / "demo.py"), "--data", str(tmp_path / "data")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    printed = done.stdout + done.stderr
    assert done.returncode == 0 and "demo passed" in done.stdout, printed[-3000:]

    written = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    # and whatever it wrote in the repository itself (it should write nothing there)
    written += [p for p in ROOT.rglob("*") if p.is_file() and p.stat().st_mtime >= began
                and not {".venv", ".git", ".pytest_cache", ".ruff_cache", ".hypothesis"} & set(p.relative_to(ROOT).parts)]
    names = {p.name for p in written}
    # the scan saw what matters: the app's log and status, Airflow's task logs, the published report
    assert {"app.log", "status.json", "index.html", "verdict.json"} <= names, sorted(names)[:80]
    assert any(p.name.startswith("dags-test-") for p in written)  # each `airflow dags test` run's whole log
    found = {}
    for path in written:
        data = path.read_bytes()
        for name, value in MARKERS.items():
            if value.encode() in data:
                found.setdefault(name, []).append(str(path.relative_to(tmp_path) if path.is_relative_to(tmp_path) else path))
    for name, value in MARKERS.items():
        if value in printed:
            found.setdefault(name, []).append("(printed)")
    assert not found, f"secrets written: {found}"
    assert len(written) > 100, len(written)
