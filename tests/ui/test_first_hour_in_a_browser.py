"""The operator's first hour, in a real browser (issue 21): `make airflow`, log in, see the three
DAGs, trigger the hourly report for a complete hour, see the run succeed, open the report and see
its chart, and open the hour's Data Docs offline.

Playwright for Python drives Debian's `chromium` (browser downloads are not reachable here);
`make test-ui` installs it when it is missing and runs this file (`.ci/run` runs it after
`make test`). The launcher runs as `make airflow` runs it, on a folder and ports of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hour_fixtures import HOUR, exported_snapshot, free_port, good_rows, write_hour

pytestmark = [pytest.mark.ui, pytest.mark.airflow, pytest.mark.s3]
ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = "s3://streamjoin/ui/snapshots/city_info"
DAGS = ("streaming_join_apps", "lookup_snapshot_refresh", "hourly_enrichment_report")
HOMES: dict[str, Path] = {}  # the launcher's Airflow home by UI address, for the diagnostics of a timeout


def airflow_home(url: str) -> Path:
    return HOMES[url]


def wait_for(condition, timeout: float, what: str, every: float = 1.0, seen=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; {seen()}")


@pytest.fixture
def airflow_up(tmp_path):
    """`make airflow` on a home, an S3 folder and ports of its own; yields (url, password, S3 env, S3 folder)."""
    data = tmp_path / "s3"
    port, s3_port = free_port(), free_port()
    log = tmp_path / "launcher.log"
    env = {**os.environ, "OUTPUT_PATH": "s3://streamjoin/ui/output", "REPORTS_PATH": "s3://streamjoin/ui/reports",
           "CITY_INFO_SNAPSHOTS_PATH": SNAPSHOTS}
    env.pop("AIRFLOW__API__HOST", None)
    launcher = subprocess.Popen(
        [sys.executable, str(ROOT / "include" / "airflow_local.py"), "--port", str(port), "--s3-port", str(s3_port),
         "--home", str(tmp_path / "airflow"), "--data", str(data)],
        cwd=ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    try:
        text = wait_for(lambda: launcher.poll() is None and "stop with Ctrl-C" in log.read_text() and log.read_text()
                        or _failed(launcher, log), 300, "the launcher's banner")
        login = re.search(r"login admin / (\S+)\)", text)
        exports = dict(re.findall(r"^  export (\w+)=(\S*)$", text, re.M))
        assert login and "AWS_ENDPOINT_URL" in exports, text
        HOMES[f"http://127.0.0.1:{port}"] = tmp_path / "airflow"
        yield f"http://127.0.0.1:{port}", login.group(1), exports, data
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGINT)  # what Ctrl-C does
            try:
                launcher.wait(timeout=120)
            except subprocess.TimeoutExpired:
                launcher.kill()
    assert launcher.returncode == 0, log.read_text()[-3000:]
    # (and the embedded Kafka broker, which make airflow starts when its port is free)
    assert re.search(r"stopped Airflow(, the embedded S3 and the embedded Kafka broker| and the embedded S3)$",
                     log.read_text(), re.MULTILINE), log.read_text()[-2000:]


def _failed(launcher: subprocess.Popen, log: Path):
    if launcher.poll() is not None:
        raise AssertionError(f"the launcher exited {launcher.returncode}:\n{log.read_text()[-3000:]}")
    return None


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is not installed: `make test-ui` installs it (apt-get install chromium)"
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's sandbox refuses to run as root, as CI here does
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def test_an_operator_logs_in_triggers_the_report_for_a_complete_hour_and_opens_its_report_with_its_chart(
        airflow_up, browser, monkeypatch):
    url, password, s3_env, data = airflow_up
    for name, value in s3_env.items():  # from the banner's `export` lines, as an operator's other shell
        monkeypatch.setenv(name, value)
    # an hour the app has completed (rows and marker), joined with an exported snapshot of the cities
    write_hour("s3://streamjoin/ui/output", good_rows(), snapshot=exported_snapshot(SNAPSHOTS))

    page = browser.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{url}/")
    page.locator("input[name=username]").fill("admin")
    page.locator("input[name=password]").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda address: "/auth/login" not in address)  # signed in: the UI's home page

    def seen():  # enough to tell a queued run (paused DAG, slow scheduler) from a running or stuck task
        rows = page.locator("tbody tr").all_inner_texts() if page.locator("tbody tr").count() else []
        log = Path(airflow_home(url)) / "standalone.log"
        tail = [line for line in (log.read_text(errors="replace").splitlines() if log.exists() else [])
                if "hourly_enrichment_report" in line or "ERROR" in line or "scheduler" in line.lower()][-25:]
        return (f"the page at {page.url} shows: {page.locator('body').inner_text()[:600]!r}; its rows: {rows!r}; "
                "the launcher's log says:\n" + "\n".join(tail))

    def listed():  # a fresh home: the DAG processor's first parse may come after the UI is up
        from playwright.sync_api import TimeoutError as NotYet

        page.goto(f"{url}/dags")
        try:
            page.get_by_role("link", name=DAGS[-1]).first.wait_for(timeout=15_000)
        except NotYet:
            return False
        return all(page.get_by_role("link", name=dag_id).count() for dag_id in DAGS)

    wait_for(listed, 240, "the three DAGs in the DAG list", every=5, seen=seen)

    page.get_by_role("link", name="hourly_enrichment_report").first.click()
    page.wait_for_url("**/dags/hourly_enrichment_report")
    page.get_by_text("Latest Dag Version").wait_for()  # the DAG's page is up, not the list behind it
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Trigger Dag - hourly_enrichment_report").wait_for()
    dialog.locator("#element_hour").fill(HOUR)
    assert dialog.locator("#element_app").input_value() == "hourly_city_sales"
    dialog.get_by_role("button", name="Trigger").click()

    def succeeded():
        page.goto(f"{url}/dags/hourly_enrichment_report/runs")
        rows = page.locator("tbody tr")
        rows.first.wait_for()
        texts = [text.lower() for text in rows.all_inner_texts()]
        manual = [text for text in texts if "manual__" in text]
        if any("failed" in text for text in manual):
            raise AssertionError(f"the triggered run failed: {manual}")
        return any("success" in text for text in manual)

    wait_for(succeeded, 300, "the triggered run's success in the UI", every=5, seen=seen)

    report = data / "streamjoin" / "ui" / "reports" / "hourly_city_sales" / f"hour={HOUR}" / "index.html"
    assert report.exists(), sorted(str(p.relative_to(data)) for p in data.rglob("*"))
    page.goto(report.as_uri())
    body = page.locator("body").inner_text()
    assert "VALIDATED" in body and "NOT VALIDATED" not in body, body[:2000]
    assert "Not checked" not in body, body[:2000]  # the key set and attributes were compared with the snapshot
    chart = page.locator("img").first
    chart.wait_for()
    assert chart.evaluate("img => img.complete && img.naturalWidth > 0"), "the report's chart did not load"
    assert "city-3" in body

    # the hour's Data Docs, opened from the folder with the network cut off: styled and working
    page.route(re.compile(r"^https?://"), lambda route: route.abort())
    docs = data / "streamjoin" / "ui" / "output" / "_quality" / f"hour={HOUR}" / "docs"
    (validation,) = docs.glob("validations/**/*.html")
    page.goto(validation.as_uri())
    assert page.evaluate("typeof jQuery === 'function' && typeof jQuery.fn.bootstrapTable === 'function' && typeof jQuery.fn.tooltip === 'function'")
    assert page.evaluate("typeof vegaEmbed === 'function'")
    # Bootstrap's stylesheet applied (an unstyled page keeps the browser's 8 px body margin)
    assert page.evaluate("getComputedStyle(document.body).margin") == "0px"
    assert "Status: Succeeded" in " ".join(page.locator("body").inner_text().split())
