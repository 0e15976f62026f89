"""Refreshing an app's lookup snapshots (Airflow-free; `lookup_snapshot_refresh` calls it).

SEMANTICS §7: a running query never refreshes its snapshot; only a restart takes a new one.
So: export each lookup table as a new immutable version, ask the running query to restart
(`<checkpoint>/control/restart`: it finishes its micro-batch, stops, and starts again from its
checkpoint in the same process, loading the latest versions), then wait until its status
names the new versions. No stream row is lost or repeated: the restart resumes from the
checkpoint's offsets and the sink's commits are idempotent.
"""

from __future__ import annotations

import json
import logging
import time

from streamjoin.runtime.app import App, Control, take_snapshots

log = logging.getLogger("streamjoin.refresh")


class RefreshFailed(RuntimeError):
    """The app did not come back on the new snapshot in time."""


def is_running(app: App, fresh_s: float = 30, clock=time.time) -> bool:
    """A heartbeat younger than `fresh_s` seconds: the app's driver is up."""
    beat = Control(app.checkpoint).read_heartbeat()
    return beat is not None and clock() - beat["at"] < fresh_s


def status(app: App) -> dict | None:
    try:
        return json.loads((app.checkpoint / "status.json").read_text())
    except (FileNotFoundError, ValueError):
        return None


def uses(snapshots_in_status: list[dict], taken: dict) -> bool:
    """Does a status's snapshot list include the exported version `taken`?"""
    return any(s.get("version") == taken["version"] and taken["root"].rstrip("/") in s.get("source", "")
               for s in snapshots_in_status)


def refresh(app: App, timeout_s: float = 600, poll_s: float = 2.0, clock=time.time, sleep=time.sleep) -> dict:
    """New snapshots, a graceful restart, and the status check. Returns what happened."""
    taken = take_snapshots(app)
    summary = {"app": app.name, "snapshots": [{k: t[k] for k in ("table", "root", "version", "rows", "sha256")} for t in taken]}
    if not taken:
        summary["outcome"] = "no lookup snapshots configured"
        return summary
    if not is_running(app, clock=clock):
        summary["outcome"] = "not running: its next start loads the new versions"
        log.warning("%s: not running; the next start loads %s", app.name, _versions(taken))
        return summary
    control = Control(app.checkpoint)
    control.request("restart", reason=f"snapshot refresh: {_versions(taken)}")
    started = clock()
    while clock() - started < timeout_s:
        current = status(app) or {}
        if (not control.requested("restart") and current.get("state") == "running"
                and all(uses(current.get("snapshots", []), t) for t in taken)):
            summary.update(outcome="running on the new snapshots", waited_s=round(clock() - started, 1),
                           status_snapshots=current["snapshots"])
            log.warning("%s: running on %s after %.0f s", app.name, _versions(taken), clock() - started)
            return summary
        sleep(poll_s)
    raise RefreshFailed(f"{app.name} is not running on {_versions(taken)} {timeout_s:.0f} s after the restart request; "
                        f"see {app.checkpoint / 'status.json'}")


def _versions(taken: list[dict]) -> str:
    return ", ".join(f"{t['table']} version {t['version']}" for t in taken)
