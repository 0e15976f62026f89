"""Named crash points, for the crash-and-restart harness (tests/crash_harness.py).

The code that makes a step durable calls `crash_point("name")` between its writes: after a
sink's files are written and before they are committed, after a commit and before the hour
marker, and so on (the names are in POINTS). Normally that does nothing. A process started
with `STREAMJOIN_CRASH_AT=NAME:N` (read into `Settings.crash_at`, armed by
`runtime.pipeline.Pipeline`) kills itself with SIGKILL the N-th time it reaches point NAME: no
`finally`, no flush, no atexit, as a killed driver would die. The Spark JVM the driver started
exits when its parent's pipe closes.

>>> arm("sink.before_commit:2"); crash_point("stage.before_manifest"); armed()
('sink.before_commit', 2)
>>> arm(None); armed() is None
True
"""

from __future__ import annotations

import os
import signal
import sys

POINTS = {
    "stage.before_manifest": "an input's step is staged (its Parquet file in place), the manifest not yet updated",
    "sink.before_state": "a sink wrote its carry or released an output file, its state.json not yet updated",
    "sink.before_commit": "an S3 sink's data files are written, the table commit not yet made",
    "sink.after_commit": "an S3 sink committed a batch, Spark has not yet recorded the batch as done",
    "sink.before_marker": "an S3 sink's hour is committed whole, its completeness marker not yet written",
    "app.restarting": "an app stopped its query for a snapshot refresh, the new query not yet started",
}

_target: tuple[str, int] | None = None
_seen: dict[str, int] = {}


def parse(text: str) -> tuple[str, int]:
    """`NAME` or `NAME:N` (N >= 1, default 1); a name not in POINTS is an error."""
    name, _, count = text.strip().partition(":")
    if name not in POINTS:
        raise ValueError(f"STREAMJOIN_CRASH_AT={text!r}: the crash points are {', '.join(POINTS)}")
    if count and (not count.isdigit() or int(count) < 1):
        raise ValueError(f"STREAMJOIN_CRASH_AT={text!r}: the count after ':' is a whole number from 1")
    return name, int(count or 1)


def arm(text: str | None) -> None:
    """Kill this process at `text` (NAME[:N]); None disarms."""
    global _target
    target = parse(text) if text else None
    if target != _target:  # the same point armed again (an app restarting its query) keeps its count
        _target = target
        _seen.clear()


def armed() -> tuple[str, int] | None:
    return _target


def crash_point(name: str) -> None:
    """A point a crash may hit: if armed for `name`, the N-th call here kills the process."""
    if _target is None or _target[0] != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] >= _target[1]:
        sys.stderr.write(f"streamjoin: crash point {name} #{_seen[name]}: killing this process\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
