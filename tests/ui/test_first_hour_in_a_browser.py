"""The operator's first hour and second day, in a real browser (issues 21 and 43): `make airflow`,
log in, see the three DAGs, trigger the hourly report for a complete hour, see the run succeed, open
the report and see its chart, and open the hour's Data Docs offline (README steps 2-3); fetch the
report from a shell that has only the banner's exports (step 3); then new input for later hours,
the apps DAG triggered with `run_seconds` beside its own schedule, and the report for a new hour
(step 4).

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


def airflow_state(home: Path) -> str:
    """What Airflow's own database says of the DAGs, their runs and the scheduler: first in a timeout's
    message (the log's tail may be cut off), it tells a paused or stale DAG from a dead scheduler."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{home / 'airflow.db'}?mode=ro", uri=True, timeout=5) as db:
            dags = db.execute("SELECT dag_id, is_paused, is_stale, max_active_runs, last_parsed_time FROM dag").fetchall()
            runs = db.execute("SELECT dag_id, run_id, state, run_after, queued_at, start_date FROM dag_run").fetchall()
            jobs = db.execute("SELECT job_type, state, start_date, latest_heartbeat FROM job").fetchall()
            now = db.execute("SELECT CURRENT_TIMESTAMP").fetchone()[0]
    except sqlite3.Error as error:
        return f"Airflow's database could not be read: {error}"
    return f"Airflow's database at {now}: dags {dags}; runs {runs}; jobs {jobs}"


def log_tail(home: Path, lines: int = 40) -> str:
    """The standalone log's last lines but the API server's access log (which would fill the tail)."""
    log = home / "standalone.log"
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join([line for line in text if "http.access" not in line][-lines:])


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
    apps = tmp_path / "hourly_city_sales"  # the app's local folders ([paths] of its app.toml), the test's own
    env = {**os.environ, "OUTPUT_PATH": "s3://streamjoin/ui/output", "REPORTS_PATH": "s3://streamjoin/ui/reports",
           "CITY_INFO_SNAPSHOTS_PATH": SNAPSHOTS, "SALES_PATH": str(apps / "sales"),
           "CITY_INFO_PATH": str(apps / "city_info"), "CHECKPOINT_PATH": str(apps / "checkpoint")}
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
        yield f"http://127.0.0.1:{port}", login.group(1), exports, data, apps
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


def test_an_operator_follows_the_readme_first_hour_and_second_day_in_a_browser_and_gets_the_report_of_a_new_hour(
        airflow_up, browser, monkeypatch, tmp_path):
    url, password, s3_env, data, apps = airflow_up
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

    def seen():  # enough to tell a queued run (paused or stale DAG, dead scheduler) from a running or stuck task
        rows = page.locator("tbody tr").all_inner_texts() if page.locator("tbody tr").count() else []
        return (f"{airflow_state(airflow_home(url))}\nthe page at {page.url} shows rows: {rows!r}; "
                f"the launcher's log says:\n{log_tail(airflow_home(url))}")

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
    dialog = trigger_form(page, "hourly_enrichment_report", paused=True)
    dialog.locator("#element_hour").fill(HOUR)
    assert dialog.locator("#element_app").input_value() == "hourly_city_sales"
    send_trigger(page, dialog, "hourly_enrichment_report", paused=True)
    wait_for(lambda: manual_runs(page, url, "hourly_enrichment_report", "success") >= 1, 300,
             "the triggered run's success in the UI", every=5, seen=seen)

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
    page.unroute(re.compile(r"^https?://"))

    # step 3 from a shell with nothing but the banner's `export` lines: the report of the hour
    fetched = report_from_a_shell(s3_env, HOUR, tmp_path / "reports-local")
    assert "VALIDATED" in fetched and "NOT VALIDATED" not in fetched

    # step 4, the second day: more input, the apps DAG triggered with run_seconds, the new hour's report
    second_day(page, url, s3_env, data, apps, seen)


def trigger_form(page, dag_id: str, paused: bool):
    """The DAG's trigger form, opened from its page. A paused DAG's form shows the "Unpause ... on
    trigger" box, ticked, once the DAG's details have loaded: the form sent before that leaves the
    DAG paused and its run queued for good (as an operator quick on the button would)."""
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text(f"Trigger Dag - {dag_id}").wait_for()
    if paused:
        dialog.get_by_text(f"Unpause {dag_id} on trigger").wait_for()
        assert dialog.locator("input[type=checkbox]").first.is_checked(), f"the unpause box of {dag_id} is not ticked"
    return dialog


def send_trigger(page, dialog, dag_id: str, paused: bool) -> None:
    """Press the form's Trigger and wait for the API's answers: the new run's and, for a paused DAG,
    the unpause's. The UI sends the unpause beside the run without waiting for it, so a page left at
    once (as the next check does) could cancel it in flight: the DAG stays paused and its run queued
    for good (the browser test's run "Queued for 300 s" on busy machines)."""
    from urllib.parse import urlparse

    def call(method: str, path: str):
        return lambda response: response.request.method == method and urlparse(response.url).path.endswith(path)

    with page.expect_response(call("POST", f"/api/v2/dags/{dag_id}/dagRuns")) as run:
        if paused:
            with page.expect_response(call("PATCH", f"/api/v2/dags/{dag_id}")) as unpaused:
                dialog.get_by_role("button", name="Trigger").click()
            answer = unpaused.value
            for _ in range(3):  # Airflow's SQLite, written by the run's POST at the same instant, may answer
                if answer.ok or answer.status < 500:  # 500 "Database error" (locked): sent again, as a user would
                    break
                page.wait_for_timeout(1000)
                answer = page.request.fetch(unpaused.value.request)
            assert answer.ok, f"unpausing {dag_id}: {answer.status} {answer.text()}"
        else:
            dialog.get_by_role("button", name="Trigger").click()
    assert run.value.ok, f"triggering {dag_id}: {run.value.status} {run.value.text()}"


def manual_runs(page, url: str, dag_id: str, state: str) -> int:
    """How many of the DAG's manually triggered runs its Runs page shows in `state` (a failed one fails the test)."""
    from playwright.sync_api import TimeoutError as NotYet

    page.goto(f"{url}/dags/{dag_id}/runs")
    rows = page.locator("tbody tr")
    try:
        rows.first.wait_for(timeout=20_000)
    except NotYet:  # the page has not drawn its runs yet (a busy machine): the caller's wait_for asks again
        return 0
    manual = [text.lower() for text in rows.all_inner_texts() if "manual__" in text.lower()]
    if any("failed" in text for text in manual):
        raise AssertionError(f"a triggered run of {dag_id} failed: {manual}")
    return sum(state in text for text in manual)


def report_from_a_shell(exports: dict[str, str], hour: str, into: Path) -> str:
    """README step 3's `streamjoin report hourly_city_sales --hour H --open` in a shell whose
    only settings are the banner's exports (nothing but them names the storage); the report's text."""
    env = {name: value for name, value in os.environ.items() if not name.endswith("_PATH") and not name.startswith("AWS_")}
    env.update(exports, BROWSER="true")  # --open hands the file to the default browser: here `true`
    done = subprocess.run([str(Path(sys.executable).parent / "streamjoin"), "report", "hourly_city_sales", "--hour", hour,
                           "--open", "--to", str(into)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = re.search(r"^report:\s+(\S+)", done.stdout, re.M)
    assert report and Path(report.group(1)).exists(), done.stdout
    assert "data docs: none" not in done.stdout, done.stdout  # the hour was checked: its Data Docs came along
    return Path(report.group(1)).read_text()


def second_day(page, url: str, s3_env: dict[str, str], data: Path, apps: Path, seen) -> None:
    """README step 4 as written: generate.py for hours the app has not seen, written beside earlier
    input (names never reused), `streaming_join_apps` triggered with run_seconds (its unpause box
    ticked, so its scheduled run starts too and must not hold the manual one back), the report of
    2024-01-01T05 triggered and published."""
    from streamjoin.io.sources import snapshots

    generate = [sys.executable, str(ROOT / "include" / "apps" / "hourly_city_sales" / "generate.py"), "--out", str(apps)]
    subprocess.run([*generate, "--start", "2024-01-01T03:00:00", "--hours", "2"], check=True, cwd=ROOT, timeout=120)
    earlier = {f.name: f.read_bytes() for f in (apps / "sales").iterdir()}
    subprocess.run([*generate, "--start", "2024-01-01T05:00:00", "--hours", "2"], check=True, cwd=ROOT, timeout=120)
    later = {f.name: f.read_bytes() for f in (apps / "sales").iterdir()}
    assert all(later[name] == content for name, content in earlier.items()), "generate.py wrote over input already there"
    assert len(later) > len(earlier)
    # the generated cities as the snapshot's latest version (what make demo's app took at its first start;
    # the first part's hour used a 10-city version of its own)
    import pyarrow.csv as csv

    snapshots.export(csv.read_csv(apps / "city_info" / "city_info.csv"), SNAPSHOTS, "files city_info")

    page.goto(f"{url}/dags/streaming_join_apps")
    page.get_by_text("Latest Dag Version").wait_for()
    dialog = trigger_form(page, "streaming_join_apps", paused=True)
    # an integer param is a number input whose root carries the element id; its <input> carries the name
    run_seconds = dialog.locator("input[name=element_run_seconds], #element_run_seconds input, input#element_run_seconds").first
    try:
        run_seconds.wait_for(timeout=20_000)
    except Exception as missing:
        html = dialog.inner_html()
        at = html.find("run_seconds")
        raise AssertionError(f"no run_seconds field in the trigger form: {html[max(0, at - 1500):at + 1500]}") from missing
    run_seconds.fill("150")
    send_trigger(page, dialog, "streaming_join_apps", paused=True)

    new_hour = "2024-01-01T05"
    marker = data / "streamjoin" / "ui" / "output" / "_complete" / f"hour={new_hour}.json"
    app_log = apps / "checkpoint" / "app.log"
    wait_for(marker.exists, 480, f"the app to complete hour {new_hour} (its marker)", every=5,
             seen=lambda: seen() + "\nthe app's log ends:\n" + (app_log.read_text()[-2000:] if app_log.exists() else "(none)"))

    page.goto(f"{url}/dags/hourly_enrichment_report")
    page.get_by_text("Latest Dag Version").wait_for()
    dialog = trigger_form(page, "hourly_enrichment_report", paused=False)  # unpaused by its first trigger
    dialog.locator("#element_hour").fill(new_hour)
    send_trigger(page, dialog, "hourly_enrichment_report", paused=False)
    wait_for(lambda: manual_runs(page, url, "hourly_enrichment_report", "success") >= 2, 300,
             f"the report run for {new_hour} to succeed", every=5, seen=seen)

    report = data / "streamjoin" / "ui" / "reports" / "hourly_city_sales" / f"hour={new_hour}" / "index.html"
    page.goto(report.as_uri())
    body = page.locator("body").inner_text()
    assert "VALIDATED" in body and "NOT VALIDATED" not in body, body[:2000]
    assert "city_001" in body or "city_002" in body, body[:2000]
    # the manual run of the apps ends as success once its run_seconds are up (the scheduled one handed over)
    wait_for(lambda: manual_runs(page, url, "streaming_join_apps", "success") >= 1, 300,
             "the manual run of streaming_join_apps to succeed", every=10, seen=seen)
