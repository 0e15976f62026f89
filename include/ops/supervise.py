"""Keeping a streaming app up for a bounded run (Airflow-free; `streaming_join_apps` calls it).

How a long-running app coexists with Airflow's workers (docs/operations.md): each DAG run owns
one **bounded run** of each app. The supervisor starts the app for the rest of its window
(`run_app.py APP --run-for SECONDS`: it stops itself gracefully at the end), watches it, and
restarts it from its checkpoint when it dies or stalls; the next DAG run starts it again from the
same checkpoint, so no row is lost between runs (the checkpoint holds every input offset and
every committed output version).

- **died**: the process ended with a non-zero code (killed, crashed): restart.
- **stalled**: no heartbeat for `stall_s` (the driver hangs), or one micro-batch has been running
  for `stall_s`: kill, restart.
- **ended**: exit code 0 (its window is over, or an operator asked it to stop): the run is done.
- More than `max_restarts` restarts in one run: `AppDown` (the DAG alerts and fails).

**One app, two DAG runs** (`hand_over`): an app runs on one checkpoint, so two runs never run it at
once. A *manually* triggered run asks the app another run is running to stop gracefully (it
finishes its micro-batch; that run's task ends as "ended"), waits for it to end, and runs it with
its own window: a manual run is never queued behind the scheduled one. A *scheduled* run that
finds the app running (a manual run's, or the previous hour's still in its window) waits for it
to end, then runs it, as a queued run did. Two DAG runs that start together (a trigger whose
"unpause" box starts the schedule's run beside it) both find no app running yet, so before that
each takes the app's **claim**, a lock on `<checkpoint>/control/supervisor.lock` held while it
supervises (`claim`): the run that does not get it does the above to the run that has it (a
manual one repeats its stop request until that run's app has seen it), and starts the app only
once the claim is its own.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from streamjoin.runtime.app import App, Control
from streamjoin.runtime.session import driver_java_options
from streamjoin.settings import Settings

log = logging.getLogger("streamjoin.supervise")
TAKE_OVER = "a manually triggered run takes the app over"  # the reason of its stop request
SUPERVISOR_LOCK = "supervisor.lock"  # the claim: its text names the run that holds it
RUN_APP = str(Path(__file__).resolve().parents[2] / "spark_apps" / "run_app.py")


class Launched(Protocol):
    def poll(self) -> int | None: ...  # the exit code once ended, else None
    def kill(self) -> None: ...


class AppDown(RuntimeError):
    """The app could not be kept up within its restart budget."""


@dataclass
class Supervision:
    app: str
    starts: int = 0
    restarts: int = 0
    events: list[str] = field(default_factory=list)
    outcome: str = ""


def alive(control: Control, fresh_s: float = 10.0) -> int | None:
    """The pid of a live process running the app (a fresh heartbeat from a process that exists)."""
    beat = control.read_heartbeat()
    if beat is None or time.time() - beat["at"] > fresh_s or beat.get("pid") == os.getpid():
        return None
    try:
        os.kill(beat["pid"], 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # another user's process: it exists
    return beat["pid"]


def hand_over(app: App, manual: bool, result: Supervision, wait_s: float = 4 * 3600, poll_s: float = 2.0,
              clock=time.time, sleep=time.sleep) -> None:
    """Before this run starts `app`: nothing to do when no other run runs it. A manual run asks
    the running app to stop (gracefully) and waits for it to end; a scheduled run waits for it to
    end (see the module docstring). Each wait says, every minute, what it waits for."""
    control = Control(app.checkpoint)
    pid = alive(control)
    if pid is None:
        return
    if manual:
        control.request("stop", reason=TAKE_OVER)
        _event(result, f"running in another DAG run (pid {pid}): asked it to stop gracefully (a manual run takes over)")
    else:
        _event(result, f"running in another DAG run (pid {pid}): waiting for it to end (a manual run's, or the "
                       "previous run's window)")
    deadline, said = clock() + wait_s, clock()
    while alive(control) is not None:
        if clock() > deadline:
            raise AppDown(f"{app.name}: the run in pid {pid} did not end within {wait_s:.0f} s; this run cannot start it")
        if clock() - said >= 60:
            _event(result, f"still waiting for pid {pid} to end (its heartbeat: {control.dir / 'heartbeat'})")
            said = clock()
        sleep(poll_s)
    _event(result, f"the other run (pid {pid}) ended: starting the app here")


def supervise(app: App, launch: Callable[[float], Launched], window_s: float, stall_s: float = 600,
              max_restarts: int = 3, poll_s: float = 2.0, clock=time.time, sleep=time.sleep,
              manual: bool = False) -> Supervision:
    """Run `app` for `window_s` seconds through `launch(run_for_s)`, restarting it as above;
    first `hand_over` from a run of another DAG run (`manual`: this run was triggered by hand)."""
    control = Control(app.checkpoint)
    result = Supervision(app.name)
    held = claim(app, manual, result, poll_s=poll_s, clock=clock, sleep=sleep)
    try:
        hand_over(app, manual, result, poll_s=poll_s, clock=clock, sleep=sleep)
        return _supervised(app, launch, window_s, control, result, stall_s, max_restarts, poll_s, clock, sleep)
    finally:
        held.close()  # the claim goes with it


def claim(app: App, manual: bool, result: Supervision, wait_s: float = 4 * 3600, poll_s: float = 2.0,
          clock=time.time, sleep=time.sleep):
    """This DAG run's claim on `app` (see the module docstring): the open lock file, held until
    closed. Found by the browser test (issue 43): a manual run and the scheduled run its trigger
    unpaused started the app together; the second read the first's half-written snapshot, then
    used up its restarts on "another run is using the checkpoint" and alerted the app down."""
    control = Control(app.checkpoint)
    handle = control.lock(SUPERVISOR_LOCK)  # held while this run supervises: the caller closes it
    if handle is None:
        other = (control.dir / SUPERVISOR_LOCK).read_text().strip() or "another DAG run"
        if manual:
            control.request("stop", reason=TAKE_OVER)
            _event(result, f"supervised by {other}: asked its app to stop gracefully (a manual run takes over)")
        else:
            _event(result, f"supervised by {other}: waiting for it to end (a manual run's, or the previous run's window)")
        deadline, said = clock() + wait_s, clock()
        while (handle := control.lock(SUPERVISOR_LOCK)) is None:
            if clock() > deadline:
                raise AppDown(f"{app.name}: {other} did not end within {wait_s:.0f} s; this run cannot start the app")
            if manual and not control.requested("stop"):  # an app that started since cleared the request
                control.request("stop", reason=TAKE_OVER)
            if clock() - said >= 60:
                _event(result, f"still waiting for {other} to end")
                said = clock()
            sleep(poll_s)
        _event(result, f"{other} ended: this run supervises the app")
    handle.seek(0)
    handle.truncate()
    handle.write(f"the {'manual' if manual else 'scheduled'} DAG run in pid {os.getpid()}")
    handle.flush()
    return handle


def _supervised(app: App, launch: Callable[[float], Launched], window_s: float, control: Control, result: Supervision,
                stall_s: float, max_restarts: int, poll_s: float, clock, sleep) -> Supervision:
    end = clock() + window_s
    while True:
        run_for = max(end - clock(), 1.0)
        process = launch(run_for)
        result.starts += 1
        started = clock()
        _event(result, f"started a bounded run of {run_for:.0f} s (start {result.starts})")
        while True:
            code = process.poll()
            if code is not None:
                why = None if code == 0 else f"died (exit code {code})"
                break
            why = _stalled(control.read_heartbeat(), started, stall_s, clock())
            if why:
                process.kill()
                break
            sleep(poll_s)
        if why is None:
            result.outcome = "ended"
            _event(result, "ended gracefully")
            return result
        result.restarts += 1
        if result.restarts > max_restarts:
            result.outcome = "down"
            _event(result, f"{why}; {max_restarts} restarts used up: the app is down")
            raise AppDown(f"{app.name} {why} and could not be kept up ({max_restarts} restarts in this run); "
                          f"see {app.checkpoint / 'status.json'}")
        _event(result, f"{why}; restarting from its checkpoint ({result.restarts} of {max_restarts})")


def _stalled(heartbeat: dict | None, started: float, stall_s: float, now: float) -> str | None:
    if heartbeat is None or heartbeat["at"] < started:
        return f"stalled (no heartbeat {stall_s:.0f} s after start)" if now - started > stall_s else None
    if now - heartbeat["at"] > stall_s:
        return f"stalled (no heartbeat for {now - heartbeat['at']:.0f} s)"
    since = heartbeat.get("trigger_active_since")
    if since is not None and heartbeat["at"] - since > stall_s:
        return f"stalled (one micro-batch running for {heartbeat['at'] - since:.0f} s)"
    return None


def _event(result: Supervision, text: str) -> None:
    line = f"{result.app}: {text}"
    result.events.append(line)
    log.warning(line)


class SubprocessLaunch:
    """`spark-submit run_app.py APP --run-for S` as a child process (outside Airflow: tests, demo)."""

    def __init__(self, app: App, run_for_s: float, spark_submit: str | None = None, master: str = "local[2]",
                 log_path: Path | None = None):
        binary = spark_submit or str(Path(sys.executable).with_name("spark-submit"))
        # STREAMJOIN_DRIVER_JAVA_OPTIONS and the class archive (docs/deployment.md)
        java_options = driver_java_options(Settings.from_env(), bounded=False)
        command = [binary, "--master", master, *(["--driver-java-options", java_options] if java_options else []),
                   RUN_APP, str(app.dir), "--run-for", f"{run_for_s:.0f}"]
        app.checkpoint.mkdir(parents=True, exist_ok=True)
        self.log = open(log_path or (app.checkpoint / "app.log"), "ab")  # closed on exit
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def poll(self) -> int | None:
        code = self.process.poll()
        if code is not None:
            self.log.close()
        return code

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=60)
        self.log.close()


class HookLaunch:
    """A bounded run through Airflow's SparkSubmitHook (what SparkSubmitOperator runs), in a
    thread, so the supervisor can watch it; `kill` is the hook's own `on_kill`."""

    def __init__(self, hook):
        import threading

        self.hook, self.error, self.done = hook, None, False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.hook.submit(RUN_APP)
        except Exception as error:
            log.error("spark-submit of %s failed: %s", RUN_APP, error, exc_info=True)
            self.error = error
        finally:
            self.done = True

    def poll(self) -> int | None:
        if not self.done:
            return None
        return 1 if self.error is not None else 0

    def kill(self) -> None:
        self.hook.on_kill()
        self.thread.join(timeout=60)
