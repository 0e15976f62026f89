"""The hourly enrichment report's steps, without Airflow: what the `hourly_enrichment_report` DAG calls.

    target = resolve("hourly_city_sales", "", data_interval_end)   # {"app", "hour", "output", "marker"}
    outcome = check_and_publish("hourly_city_sales", target["hour"])  # raises DataQualityFailed

`check_and_publish` runs the quality checkpoint on the hour (`streamjoin.quality.check_hour`,
which writes the verdict and delivers the alert when the hour fails), then publishes the hour's
report (`include/reports/<app>.py`) to `<reports>/<app>/hour=H/`, validated or not, and raises
`DataQualityFailed` afterwards when the checks failed.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging

from streamjoin.io.storage import s3

from .apps import AppConfig, load_app

log = logging.getLogger(__name__)  # in a task's log (the sensor's pokes)


class DataQualityFailed(Exception):
    """The hour failed its quality checks: its report is published as NOT VALIDATED and the alert
    has gone out. `outcome` is what `check_and_publish` would have returned."""

    def __init__(self, message: str, outcome: dict):
        super().__init__(message)
        self.outcome = outcome


class OutputNotOnS3(ValueError):
    """The app writes to a local folder: the DAG's S3 sensor cannot wait for its markers."""


class HourCannotComplete(LookupError):
    """Waiting for the hour's completeness marker is pointless (or has lasted too long): why, and
    what to do instead."""


# How long the report waits for an hour's marker: at most MAX_WAIT_S; only NO_INPUT_WAIT_S when no
# input for the hour has reached the app (it may be starting).
MAX_WAIT_S = 2 * 3600
NO_INPUT_WAIT_S = 600
END_OF_INPUT = dt.datetime.max.replace(tzinfo=dt.UTC)  # an app clock that will not move again


def resolve_hour(params_hour: str | None, interval_end: dt.datetime | None) -> str:
    """The hour a run works on: `params_hour` when given (a UI trigger for a chosen hour), else
    the last hour that ended by `interval_end` (the run's data_interval_end, or its run_after).

    Airflow 3 schedules `@hourly` with CronTriggerTimetable: the 11:00 run has data interval
    [11:00, 11:00], so data_interval_start is the hour that is starting, not the one that ended;
    floor(end) - 1 hour is 10:00 with either timetable and for a manual run at 11:23."""
    from streamjoin.io.sinks.hours import normalize_hour

    if params_hour and str(params_hour).strip():
        return normalize_hour(str(params_hour).strip())
    if interval_end is None:
        raise ValueError("no hour given and no data interval to take it from")
    end = interval_end.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return (end - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H")


def marker_key(app: str | AppConfig, hour: str) -> tuple[str, str] | str:
    """Where the hour's completeness marker is: (bucket, key) on S3, or a local path."""
    from streamjoin.io.sinks.hours import normalize_hour

    config = app if isinstance(app, AppConfig) else load_app(app)
    path = s3.join(config.output, "_complete", f"hour={normalize_hour(hour)}.json")
    return s3.split(path) if s3.is_s3(path) else path


def resolve(app: str, params_hour: str | None, interval_end: dt.datetime | None) -> dict:
    """What a run works on: {"app", "hour", "output", "marker": "s3://bucket/key"}."""
    config = load_app(app)
    hour = resolve_hour(params_hour, interval_end)
    where = marker_key(config, hour)
    if isinstance(where, str):
        raise OutputNotOnS3(f"app {config.name} writes to the local folder {config.output}: the report's sensor waits "
                            "for completeness markers in S3; set OUTPUT_PATH (or [paths] output) to an s3:// prefix")
    return {"app": config.name, "hour": hour, "output": config.output, "marker": f"s3://{where[0]}/{where[1]}"}


def report_dir(app: AppConfig, hour: str) -> str:
    """`<reports root>/<app>/hour=H`."""
    return s3.join(app.reports, app.name, f"hour={hour}")


def check_and_publish(app: str, hour: str) -> dict:
    """Check the hour, publish its report; returns {"app", "hour", "status", "validated", "report"
    (index.html), "files", "verdict", "docs", "failed" (the failed checks), "alerts"}. Raises
    `DataQualityFailed` after publishing when the hour failed (check_hour delivered the alert)."""
    from streamjoin.io.sinks.hours import normalize_hour, read_hour_arrow
    from streamjoin.quality import check_hour

    config = load_app(app)
    hour = normalize_hour(hour)
    verdict = check_hour(config.dir, hour, output=config.output)
    report_module = importlib.import_module(f"..reports.{config.config.get('report', {}).get('module', config.name)}", __package__)
    report = report_module.build_report(config, hour, read_hour_arrow(config.output, hour), verdict)
    files = report_module.publish(report, report_dir(config, hour))
    outcome = {"app": config.name, "hour": hour, "status": verdict.status, "validated": verdict.passed,
               "report": files[-1], "files": files, "verdict": verdict.verdict, "docs": verdict.docs_page,
               "failed": [f.check for f in verdict.failed], "alerts": verdict.alerts}
    if not verdict.passed:
        checks = ", ".join(sorted(set(outcome["failed"])))
        raise DataQualityFailed(f"{config.name} hour {hour} failed {len(verdict.failed)} of {verdict.expectations} quality "
                                f"expectations ({checks}); report published as NOT VALIDATED: {files[-1]}; "
                                f"alerts: {verdict.alerts}", outcome)
    return outcome


def hour_ready(app: str | AppConfig, hour: str, now: dt.datetime, waited_s: float, max_wait_s: float = MAX_WAIT_S,
               no_input_wait_s: float = NO_INPUT_WAIT_S) -> bool:
    """One look for the hour's completeness marker: True when it is there, False to look again,
    or `HourCannotComplete` saying why it will not come:

    - the hour has not ended yet (a future or the current hour);
    - the app's output has complete hours after it but not it (the app's hours start later);
    - no input for the hour has reached the app (its status.json clock is before the hour, or the
      app never ran) after `no_input_wait_s`;
    - `max_wait_s` have passed.
    """
    from streamjoin.io.sinks.hours import complete_hours, normalize_hour

    config = app if isinstance(app, AppConfig) else load_app(app)
    hour = normalize_hour(hour)
    start = dt.datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=dt.UTC)
    end = start + dt.timedelta(hours=1)
    if end > now:
        raise HourCannotComplete(
            f"hour {hour} has not ended yet (it ends at {end:%Y-%m-%d %H:%M} UTC; now is {now.astimezone(dt.UTC):%Y-%m-%d %H:%M} "
            "UTC): its report can be made once it has ended and the app has passed it. Trigger again then, or leave "
            "`hour` empty for the hour that just ended.")
    hours = complete_hours(config.output)
    if hour in hours:
        return True
    later = [h for h in hours if h > hour]
    if later:
        raise HourCannotComplete(
            f"hour {hour} of app {config.name} will not be complete: the app's output has complete hours after it "
            f"({later[0]} to {hours[-1]}) but not it, so the app wrote nothing for it (its hours start at {hours[0]}). "
            f"Pick one of its hours.")
    clock, where = app_clock(config)
    have = f"its complete hours: {hours[0]} to {hours[-1]}" if hours else "it has no complete hour yet"
    if clock == END_OF_INPUT:
        raise HourCannotComplete(
            f"app {config.name}'s input has ended (an --until-idle run) without hour {hour} ({have}): "
            "pick one of its hours, or run the app on new input with a new checkpoint.")
    if (clock is None or clock < start) and waited_s >= no_input_wait_s:
        raise HourCannotComplete(
            f"no input for hour {hour} has reached app {config.name} after {waited_s / 60:.0f} min ({where}; {have}). "
            f"Make input for the hour (include/apps/{config.name}/generate.py), run the app (DAG streaming_join_apps, "
            "or `spark-submit spark_apps/run_app.py`), then trigger again; or pick an hour the app has.")
    if waited_s >= max_wait_s:
        raise HourCannotComplete(
            f"hour {hour} of app {config.name} is still not complete after {waited_s / 60:.0f} min ({where}; {have}): "
            "is the app running (DAG streaming_join_apps) and its input arriving?")
    key = marker_key(config, hour)
    marker = key if isinstance(key, str) else f"s3://{key[0]}/{key[1]}"
    moves = (f"input for {hour} reaching the app moves it (DAG streaming_join_apps runs the app); without any, this "
             f"fails after {no_input_wait_s / 60:.0f} min" if clock is None or clock < start else
             f"the marker comes once the clock passes {end:%Y-%m-%d %H:%M} UTC (input after the hour)")
    log.info("waiting for hour %s of app %s: no marker at %s yet; %s; %s; %.0f of at most %.0f min waited",
             hour, config.name, marker, where, moves, waited_s / 60, max_wait_s / 60)
    return False


def app_clock(config: AppConfig) -> tuple[dt.datetime | None, str]:
    """How far the app's input has got, from its status.json: the latest input clock (None when
    the app has not run or read nothing; END_OF_INPUT after an --until-idle run), and a phrase
    saying so."""
    import json
    from pathlib import Path

    if not config.checkpoint:
        return None, "the app has no checkpoint to read its progress from"
    path = Path(config.checkpoint) / "status.json"
    try:
        status = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None, f"the app has not run: no {path}"
    clocks = [i.get("clock") for i in (status.get("inputs") or {}).values() if i.get("clock")]
    if any(c == "end of input" for c in clocks):
        return END_OF_INPUT, "the app's input has ended"
    if not clocks:
        return None, "the app has read no input yet"
    latest = max(dt.datetime.strptime(c[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC) for c in clocks)
    return latest, f"the app's input clock is at {latest:%Y-%m-%d %H:%M:%S}"
