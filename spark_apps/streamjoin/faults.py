"""Named crash points, for the crash-and-restart harnesses (tests/crash_harness.py: a process
killed; tests/crash_matrix.py: the same kill, simulated in the test's own process).

The code that makes a step durable calls `crash_point("name")` between its writes: after a
sink's files are written and before they are committed, after a commit and before the hour
marker, and so on (the names are in POINTS). Normally that does nothing. A process started
with `STREAMJOIN_CRASH_AT=NAME:N` (read into `Settings.crash_at`, armed by
`runtime.pipeline.Pipeline`) kills itself with SIGKILL the N-th time it reaches point NAME: no
`finally`, no flush, no atexit, as a killed driver would die. The Spark JVM the driver started
exits when its parent's pipe closes.

Armed with `simulate=True` (tests only), the N-th arrival raises `CrashPointReached` instead, and
from then on every crash point any thread reaches raises it too: the process is "dead", so no
later durable step of it lands (the harness then abandons the run and starts another on the same
checkpoint, as a supervisor restarts a killed one).

>>> arm("sink.before_commit:2"); crash_point("stage.before_manifest"); armed()
('sink.before_commit', 2)
>>> arm(None); armed() is None
True
"""

from __future__ import annotations

import os
import signal
import sys
import threading

# Adding one: a name and what is durable at that instant (docs/reliability.md, "How to add a point");
# then `crash_point(NAME)` where the code is, and the point among the cases of tests/crash_matrix.py.
POINTS = {
    "stage.before_manifest": "an input's step is staged (its Parquet file in place), the manifest not yet updated",
    "sink.after_rows": "a micro-batch's rows are computed (the query's state stores committed them), the sink has recorded none",
    "sink.before_state": "a sink wrote its carry or released an output file, its state.json not yet updated",
    "sink.before_commit": "an S3 sink's data files are written, the table commit not yet made",
    "sink.after_commit": "an S3 sink committed a batch, Spark has not yet recorded the batch as done",
    "sink.before_delta_checkpoint": "a Delta sink committed a version due a table checkpoint, the checkpoint not yet written",
    "sink.inside_release": "part of a release's records are in a Kafka topic or a Kinesis stream, the release not yet recorded",
    "sink.after_batch": "the sink has done all it does for a micro-batch, Spark's commit log does not yet hold the batch",
    "sink.before_marker": "an S3 sink's hour is committed whole, its completeness marker not yet written",
    "app.restarting": "an app stopped its query for a snapshot refresh, the new query not yet started",
}


class CrashPointReached(Exception):
    """A simulated kill (`arm(..., simulate=True)`): the run that raised it is dead."""


_target: tuple[str, int] | None = None
_simulate = False
_dead = threading.Event()
_seen: dict[str, int] = {}
_lock = threading.Lock()  # arming and a point's count: a thread of a killed run never kills the next run
_generation = 0  # each arming starts a run of its own; the objects a run makes keep its number
_killed: set[int] = set()  # the runs killed (simulated): their objects write nothing, ever
_reached: dict[str, int] = {}  # every point's count since the last arming (a harness reads how often a run passes each)


def parse(text: str) -> tuple[str, int]:
    """`NAME` or `NAME:N` (N >= 1, default 1); a name not in POINTS is an error."""
    name, _, count = text.strip().partition(":")
    if name not in POINTS:
        raise ValueError(f"STREAMJOIN_CRASH_AT={text!r}: the crash points are {', '.join(POINTS)}")
    if count and (not count.isdigit() or int(count) < 1):
        raise ValueError(f"STREAMJOIN_CRASH_AT={text!r}: the count after ':' is a whole number from 1")
    return name, int(count or 1)


def arm(text: str | None, simulate: bool = False) -> None:
    """Kill this process at `text` (NAME[:N]); None disarms. `simulate`: raise CrashPointReached
    there instead (and at every point after it), for a harness that restarts in this process."""
    global _target, _simulate, _generation
    target = parse(text) if text else None
    with _lock:
        if target != _target or simulate != _simulate or _dead.is_set():
            # the same point armed again (an app restarting its query) keeps its count
            _target, _simulate = target, simulate
            _seen.clear()
            _dead.clear()
            _reached.clear()
            _generation += 1


def reached() -> dict[str, int]:
    """How many times each point was reached since the last arming."""
    return dict(_reached)


def generation() -> int:
    """The run this process is on now (a new one after each arming that starts afresh): an object
    that writes keeps it and asks `alive(born)` before each write."""
    return _generation


def armed() -> tuple[str, int] | None:
    return _target


def armed_at(name: str) -> bool:
    """Whether point `name` is the armed one (code that must first make a point reachable: a
    release's first records sent on their own)."""
    return _target is not None and _target[0] == name


def crashed() -> bool:
    """A simulated kill happened (and the run that reached it is dead)."""
    return _dead.is_set()


def alive(born: int | None = None) -> None:
    """Before a durable write that another thread may reach without passing a crash point: a run
    killed (simulated) writes nothing more, and neither does an object of it (`born`: its run's
    `generation()`) that a late callback reaches after the next run began. Nothing otherwise (and
    nothing in a real kill, which stops every thread at once)."""
    if _dead.is_set() or (born is not None and born in _killed):
        raise CrashPointReached("this run was killed (simulated) at a crash point: nothing more is written")


def crash_point(name: str) -> None:
    """A point a crash may hit: if armed for `name`, the N-th call here kills the process."""
    if _dead.is_set():
        raise CrashPointReached(f"crash point {name}: this run was killed (simulated) at an earlier point")
    _reached[name] = _reached.get(name, 0) + 1
    if _target is None or _target[0] != name:
        return
    with _lock:
        if _target is None or _target[0] != name:
            return  # disarmed meanwhile
        _seen[name] = _seen.get(name, 0) + 1
        if _seen[name] < _target[1]:
            return
        if _simulate:
            _dead.set()
            _killed.add(_generation)
            raise CrashPointReached(f"crash point {name} #{_seen[name]}: this run is killed here (simulated)")
    sys.stderr.write(f"streamjoin: crash point {name} #{_seen[name]}: killing this process\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
