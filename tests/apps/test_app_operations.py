"""Operating an app without Airflow: the supervisor restarts a killed or stalled app from its
checkpoint and gives up after its restart budget; the snapshot refresh moves a running app to a
new snapshot version with a graceful restart, losing and repeating no row."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from app_helpers import CITIES, hour_rows, put_sales, wait_for, write_cities
from streamjoin.io.sinks.hours import complete_hours
from streamjoin.runtime.app import App, Control

from include.ops import refresh as refresh_ops
from include.ops.supervise import AppDown, SubprocessLaunch, Supervision, claim, supervise


class FakeLaunch:
    def __init__(self, codes: list[int | None]):
        self.codes, self.killed = codes, False

    def poll(self):
        return self.codes.pop(0) if self.codes else None

    def kill(self):
        self.killed = True


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_the_supervisor_restarts_an_app_that_died_and_ends_when_it_stops_gracefully(tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKPOINT_PATH", str(tmp_path / "ck"))
    launches = [FakeLaunch([None, 137]), FakeLaunch([None, None, 0])]
    clock = Clock()
    result = supervise(App.load("hourly_city_sales"), lambda run_for: launches.pop(0), 60, poll_s=1, clock=clock, sleep=clock.sleep)
    assert (result.starts, result.restarts, result.outcome) == (2, 1, "ended")
    assert "died (exit code 137)" in result.events[1]


def test_the_supervisor_kills_a_stalled_app_and_gives_up_after_its_restart_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKPOINT_PATH", str(tmp_path / "ck"))
    app = App.load("hourly_city_sales")
    clock = Clock()
    started = []

    def launch(run_for):
        started.append(FakeLaunch([]))
        Control(app.checkpoint).heartbeat(trigger_active_since=clock() - 5)  # a batch runs ... and runs
        return started[-1]

    with pytest.raises(AppDown, match="could not be kept up"):
        supervise(app, launch, 3600, stall_s=30, max_restarts=2, poll_s=10, clock=clock, sleep=clock.sleep)
    assert len(started) == 3 and all(s.killed for s in started)


# another DAG run's app: a heartbeat every 0.2 s until its window ends or a stop is requested
OTHER_RUN = """
import json, os, sys, time
from pathlib import Path
control = Path(sys.argv[1])
end = time.time() + float(sys.argv[2])
while time.time() < end and not (control / "stop").exists():
    (control / "heartbeat.tmp").write_text(json.dumps({"at": time.time(), "pid": os.getpid(), "trigger_active_since": None}))
    os.replace(control / "heartbeat.tmp", control / "heartbeat")
    time.sleep(0.2)
"""


def other_run(app: App, window_s: float):
    import subprocess
    import sys
    import threading
    import time

    control = Control(app.checkpoint)
    process = subprocess.Popen([sys.executable, "-c", OTHER_RUN, str(control.dir), str(window_s)])
    threading.Thread(target=process.wait, daemon=True).start()  # reaped when it ends, as its own task would
    while control.read_heartbeat() is None or control.read_heartbeat().get("pid") != process.pid:
        time.sleep(0.05)
    return process


def test_a_manual_run_asks_the_scheduled_runs_app_to_stop_and_runs_it_itself_without_queueing(tmp_path, monkeypatch):
    import time

    monkeypatch.setenv("CHECKPOINT_PATH", str(tmp_path / "ck"))
    app = App.load("hourly_city_sales")
    scheduled = other_run(app, window_s=300)  # the scheduled run's app, 55 minutes to go
    started = time.time()
    launched = []
    result = supervise(app, lambda run_for: launched.append(run_for) or FakeLaunch([0]), 120, poll_s=0.2, manual=True)
    assert scheduled.wait(timeout=10) == 0 and time.time() - started < 30  # it stopped gracefully, at once
    assert Control(app.checkpoint).requested("stop")  # (the app this run starts clears it: run_app)
    assert launched and launched[0] > 100 and result.outcome == "ended"  # the manual run's own window
    assert "asked it to stop gracefully (a manual run takes over)" in result.events[0]


def test_a_scheduled_run_waits_for_a_running_app_to_end_and_never_stops_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKPOINT_PATH", str(tmp_path / "ck"))
    app = App.load("hourly_city_sales")
    manual = other_run(app, window_s=2)  # a manual run's app, two seconds to go
    launched = []
    result = supervise(app, lambda run_for: launched.append(manual.poll()) or FakeLaunch([0]), 120, poll_s=0.2)
    assert launched == [0]  # started once the other had ended by itself
    assert not Control(app.checkpoint).requested("stop")
    assert "waiting for it to end" in result.events[0] and "ended: starting the app here" in result.events[1]


def test_a_manual_run_that_starts_beside_the_scheduled_one_waits_for_its_claim_and_never_starts_a_second_app(
        tmp_path, monkeypatch):
    """Found by the browser test: the trigger's unpause box starts the scheduled run beside the
    manual one; both found no app running yet and both started one on the same checkpoint."""
    import threading
    import time

    monkeypatch.setenv("CHECKPOINT_PATH", str(tmp_path / "ck"))
    app = App.load("hourly_city_sales")
    control = Control(app.checkpoint)
    scheduled = claim(app, False, Supervision(app.name))  # the scheduled run got there first; its app not up yet
    launched: list[float] = []
    outcome: list = []
    manual = threading.Thread(target=lambda: outcome.append(
        supervise(app, lambda run_for: launched.append(run_for) or FakeLaunch([0]), 120, poll_s=0.05, manual=True)))
    manual.start()
    wait_for(lambda: control.requested("stop"), what="the manual run's stop request")
    control.clear("stop")  # the scheduled run's app starts: it clears requests left before it (run_app)
    wait_for(lambda: control.requested("stop"), what="the stop request asked again")
    time.sleep(0.3)
    assert launched == []  # no second app while the scheduled run supervises
    scheduled.close()  # its app stopped gracefully, its run ended
    manual.join(timeout=30)
    assert launched and outcome[0].outcome == "ended", outcome
    assert "supervised by the scheduled DAG run in pid" in outcome[0].events[0], outcome[0].events
    assert "this run supervises the app" in outcome[0].events[1]


def test_a_second_app_on_a_checkpoint_is_refused_before_it_writes_anything(tmp_path):
    from streamjoin.runtime.app import _refuse_to_share

    control = Control(tmp_path / "ck")
    first = _refuse_to_share(control, tmp_path / "ck")  # no heartbeat yet: it is still starting
    with pytest.raises(RuntimeError, match="another run is using"):
        _refuse_to_share(control, tmp_path / "ck")
    first.close()
    _refuse_to_share(control, tmp_path / "ck").close()  # once it ended, the next one runs


@pytest.mark.long  # ~160 s; test_app_dags' kill-and-restart test covers the same path in `make test`
def test_a_killed_app_is_restarted_from_its_checkpoint_and_no_sale_is_lost_or_counted_twice(app_env):
    sales = Path(os.environ["SALES_PATH"])
    output = os.environ["OUTPUT_PATH"]
    put_sales(sales, "00.json", [(1, "Berlin", 5, "2024-01-01 00:10:00"), (2, "Lima", 7, "2024-01-01 00:20:00")])
    launches = []

    def launch(run_for):
        launches.append(SubprocessLaunch(app_env, run_for))
        return launches[-1]

    def kill_then_feed():
        beat = wait_for(lambda: Control(app_env.checkpoint).read_heartbeat(), what="the app's first heartbeat")
        wait_for(lambda: (refresh_ops.status(app_env) or {}).get("inputs", {}).get("city_sales.sales", {}).get("rows_read") == 2,
                 what="the first sales read")
        os.kill(beat["pid"], signal.SIGKILL)  # the driver dies mid-run
        put_sales(sales, "01.json", [(3, "Berlin", 1, "2024-01-01 01:10:00"), (4, "Oslo", 2, "2024-01-01 02:30:00")])

    import threading

    feeder = threading.Thread(target=kill_then_feed)
    feeder.start()
    result = supervise(app_env, launch, 150, stall_s=120, max_restarts=2, poll_s=1)
    feeder.join()
    assert result.restarts == 1 and result.outcome == "ended", result.events
    assert "died" in result.events[1]
    assert complete_hours(output) == ["2024-01-01T00", "2024-01-01T01"]  # 02 is still open (clock 02:28)
    assert hour_rows(output, "2024-01-01T00") == [("Berlin", "north", 1), ("Lima", "south", 1), ("Oslo", "north", None)]
    assert hour_rows(output, "2024-01-01T01") == [("Berlin", "north", 1), ("Lima", "south", None), ("Oslo", "north", None)]


@pytest.mark.long  # make test runs the same refresh through its DAG (tests/dags/test_app_dags.py)
def test_the_refresh_moves_a_running_app_to_the_new_snapshot_with_a_graceful_restart(app_env):
    sales = Path(os.environ["SALES_PATH"])
    output = os.environ["OUTPUT_PATH"]
    put_sales(sales, "00.json", [(1, "Berlin", 5, "2024-01-01 00:10:00"), (2, "Lima", 7, "2024-01-01 01:20:00")])
    process = SubprocessLaunch(app_env, 170)
    try:
        wait_for(lambda: complete_hours(output) == ["2024-01-01T00"], what="hour 00 marked")
        before = refresh_ops.status(app_env)
        write_cities(Path(os.environ["CITY_INFO_PATH"]), [(c, r.upper()) for c, r in CITIES])  # the table changed
        done = refresh_ops.refresh(app_env, timeout_s=120)
        assert done["outcome"] == "running on the new snapshots" and done["snapshots"][0]["version"] == 2
        after = refresh_ops.status(app_env)
        assert before["snapshots"][0]["version"] == 1 and after["snapshots"][0]["version"] == 2
        assert after["started_at"] >= before["started_at"] and after["pid"] == before["pid"]  # restarted in place
        put_sales(sales, "01.json", [(3, "Oslo", 2, "2024-01-01 02:30:00")])
        wait_for(lambda: len(complete_hours(output)) == 2, what="hour 01 marked")
        Control(app_env.checkpoint).request("stop")
        wait_for(lambda: process.poll() is not None, what="the graceful stop")
        assert process.poll() == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert_hours_on_the_old_then_the_new_snapshot(output)
    assert refresh_ops.status(app_env)["state"] == "stopped"


@pytest.mark.long  # two app starts (~2 min)
@pytest.mark.spark
def test_an_app_killed_while_restarting_for_a_refresh_comes_back_on_the_new_snapshot_losing_no_row(app_env, monkeypatch):
    """The `app.restarting` crash point (issue 20): the app has stopped its query for the refresh
    and dies before starting the new one; started again (as the supervisor does), it runs on the
    new snapshot from its checkpoint and the refresh completes."""
    import threading

    sales = Path(os.environ["SALES_PATH"])
    output = os.environ["OUTPUT_PATH"]
    put_sales(sales, "00.json", [(1, "Berlin", 5, "2024-01-01 00:10:00"), (2, "Lima", 7, "2024-01-01 01:20:00")])
    monkeypatch.setenv("STREAMJOIN_CRASH_AT", "app.restarting:1")
    first = SubprocessLaunch(app_env, 170)
    monkeypatch.delenv("STREAMJOIN_CRASH_AT")
    second = None
    try:
        wait_for(lambda: complete_hours(output) == ["2024-01-01T00"], what="hour 00 marked")
        write_cities(Path(os.environ["CITY_INFO_PATH"]), [(c, r.upper()) for c, r in CITIES])
        done = {}
        refreshing = threading.Thread(target=lambda: done.update(refresh_ops.refresh(app_env, timeout_s=240)))
        refreshing.start()
        wait_for(lambda: first.poll() is not None, what="the kill at app.restarting")
        assert first.poll() in (-signal.SIGKILL, 128 + signal.SIGKILL), first.poll()
        second = SubprocessLaunch(app_env, 170)  # what the supervisor does when the app died
        refreshing.join(timeout=300)
        assert done.get("outcome") == "running on the new snapshots" and done["snapshots"][0]["version"] == 2, done
        put_sales(sales, "01.json", [(3, "Oslo", 2, "2024-01-01 02:30:00")])
        wait_for(lambda: len(complete_hours(output)) == 2, what="hour 01 marked")
        Control(app_env.checkpoint).request("stop")
        wait_for(lambda: second.poll() is not None, what="the graceful stop")
        assert second.poll() == 0
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
    assert_hours_on_the_old_then_the_new_snapshot(output)


def assert_hours_on_the_old_then_the_new_snapshot(output: str) -> None:
    """Hour 00 closed before the refresh (old regions), hour 01 after it (new regions): every row once."""
    assert hour_rows(output, "2024-01-01T00") == [("Berlin", "north", 1), ("Lima", "south", None), ("Oslo", "north", None)]
    assert hour_rows(output, "2024-01-01T01") == [("Berlin", "NORTH", None), ("Lima", "SOUTH", 1), ("Oslo", "NORTH", None)]
