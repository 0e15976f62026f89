"""`airflow dags test` of the two app DAGs, end to end (SQLite metadata DB, local Spark, the
embedded S3): the supervisor starts an app and restarts it after it is killed; the refresh moves
a running app to a new snapshot with no row lost or repeated (checked against the input)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from airflow_helpers import dags_test
from app_helpers import CITIES, SPARK, hour_rows, put_sales, wait_for, write_cities
from streamjoin.io.sinks.hours import complete_hours
from streamjoin.runtime.app import Control

from include.ops import refresh as refresh_ops
from include.ops.supervise import SubprocessLaunch

pytestmark = [pytest.mark.airflow]  # `airflow dags test`


def test_streaming_join_apps_starts_the_app_and_restarts_it_after_it_is_killed(app_env):
    sales, output = Path(os.environ["SALES_PATH"]), os.environ["OUTPUT_PATH"]
    put_sales(sales, "00.json", [(1, "Berlin", 5, "2024-01-01 00:10:00"), (2, "Lima", 7, "2024-01-01 00:20:00")])
    killed = []

    def kill_once_running_then_feed():
        wait_for(lambda: (refresh_ops.status(app_env) or {}).get("inputs", {}).get("city_sales.sales", {}).get("rows_read") == 2,
                 timeout=240, what="the app's first batch")
        # the heartbeat starts with the first tick after the query starts: a fast first batch is in
        # status.json before it
        beat = wait_for(lambda: Control(app_env.checkpoint).read_heartbeat(), timeout=60, what="the app's heartbeat")
        os.kill(beat["pid"], signal.SIGKILL)
        killed.append(beat["pid"])
        put_sales(sales, "01.json", [(3, "Berlin", 1, "2024-01-01 01:10:00"), (4, "Oslo", 2, "2024-01-01 02:30:00")])
        # the restarted app has done its work once hour 01 is marked: a graceful stop ends the run
        # there instead of at run_seconds (the bound stays, for a slow machine)
        wait_for(lambda: len(complete_hours(output)) == 2, timeout=240, what="hour 01 marked by the restarted app")
        Control(app_env.checkpoint).request("stop", "test done")

    killer = threading.Thread(target=kill_once_running_then_feed, daemon=True)
    killer.start()
    run = dags_test("streaming_join_apps", conf={"run_seconds": 150, "apps": ["hourly_city_sales"]},
                    env=SPARK, timeout=600)
    killer.join(timeout=5)
    assert run.succeeded, run.tail()
    assert "hourly_city_sales: ended gracefully" in run.output  # by the stop request, not at run_seconds
    assert run.task_states["run_hourly_city_sales"] == "success" and killed
    assert "died (exit code" in run.output and "restarting from its checkpoint (1 of 3)" in run.output
    assert refresh_ops.status(app_env)["pid"] != killed[0]  # the run ended on a restarted driver
    # every sale exactly once, across the kill
    assert complete_hours(output) == ["2024-01-01T00", "2024-01-01T01"]
    assert hour_rows(output, "2024-01-01T00") == [("Berlin", "north", 1), ("Lima", "south", 1), ("Oslo", "north", None)]
    assert hour_rows(output, "2024-01-01T01") == [("Berlin", "north", 1), ("Lima", "south", None), ("Oslo", "north", None)]


def test_lookup_snapshot_refresh_moves_a_running_app_to_a_new_snapshot_losing_no_row(app_env):
    sales, output = Path(os.environ["SALES_PATH"]), os.environ["OUTPUT_PATH"]
    put_sales(sales, "00.json", [(1, "Berlin", 5, "2024-01-01 00:10:00"), (2, "Lima", 7, "2024-01-01 01:20:00")])
    process = SubprocessLaunch(app_env, 240)
    try:
        wait_for(lambda: complete_hours(output) == ["2024-01-01T00"], timeout=240, what="hour 00 marked")
        write_cities(Path(os.environ["CITY_INFO_PATH"]), [(c, r.upper()) for c, r in CITIES])
        run = dags_test("lookup_snapshot_refresh", conf={"apps": ["hourly_city_sales"], "timeout_seconds": 180}, timeout=400)
        assert run.succeeded, run.tail()
        assert "running on city_info version 2" in run.output
        assert refresh_ops.status(app_env)["snapshots"][0]["version"] == 2
        put_sales(sales, "01.json", [(3, "Oslo", 2, "2024-01-01 02:30:00"), (4, "Oslo", 3, "2024-01-01 02:40:00")])
        wait_for(lambda: len(complete_hours(output)) == 2, what="hour 01 marked")
        Control(app_env.checkpoint).request("stop")
        wait_for(lambda: process.poll() is not None, what="the graceful stop")
    finally:
        if process.poll() is None:
            process.kill()
    assert process.poll() == 0
    assert hour_rows(output, "2024-01-01T00") == [("Berlin", "north", 1), ("Lima", "south", None), ("Oslo", "north", None)]
    assert hour_rows(output, "2024-01-01T01") == [("Berlin", "NORTH", None), ("Lima", "SOUTH", 1), ("Oslo", "NORTH", None)]
    read = refresh_ops.status(app_env)["inputs"]["city_sales.sales"]["rows_read"]
    assert read == 4  # every sale put was read once, across the restart
