"""The query's status (`<checkpoint>/status.json`, docs/status.md) and its one-line progress summary."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path

from streamjoin.io.formats.instants import END_US, spark_watermark_rowtime_us
from streamjoin.io.formats.jsonlines import format_instant
from streamjoin.io.sinks.ordered_sink import OrderedSink
from streamjoin.io.sources.staging import Stager


class Status:
    """The query's status file (checkpoint/status.json) and a one-line progress summary."""

    def __init__(self, checkpoint: Path, stagers: list[Stager], sink: OrderedSink, query_file: str, snapshots=(), upstream=(),
                 plan: dict | None = None):
        self.path = checkpoint / "status.json"
        self.plan = plan  # lower.physical.PhysicalPlan.to_dict(): how the query runs
        self.stagers, self.sink, self.query_file = stagers, sink, query_file
        self.upstream = upstream  # the Runners of the earlier parts of a cut chain: their state counts too
        self.snapshots = [s.identity() for s in snapshots]
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        # rows_emitted counts over every run of this checkpoint; this run's count is the difference
        self.emitted_before = sink.state().rows_emitted
        self.error: str | None = None
        self.final: str | None = None
        self.lock = threading.Lock()

    def snapshot(self, query) -> dict:
        progress = (query.lastProgress if query is not None else None) or {}
        inputs = {}
        clocks = []
        for s in self.stagers:
            m = s.manifest()
            clock = s.clock_us(m)
            clocks.append(clock)
            inputs[s.spec.alias] = {
                "rows_read": m.rows,
                "late_rows": m.late_rows,
                "files": len(m.files),
                "clock": format_instant(clock),
                "late_rows_output": s.spec.late_dir,
                "rejected_rows": m.rejected_rows,
                "rejected_rows_output": str(s.rejected_dir),
                "changed_files": m.changed_files,  # files that changed after they were read (dead letters)
            }
        known = [c for c in clocks if c is not None]
        join_clock = min(known) if len(known) == len(clocks) and known else None
        watermark = spark_watermark_rowtime_us((progress.get("eventTime") or {}).get("watermark"))
        if join_clock is not None and join_clock >= END_US:
            watermark = END_US  # +infinity less the lateness is still +infinity, not a date in 7999
        emitted = self.sink.state().rows_emitted
        return {
            "query": self.query_file,
            "state": "failed" if self.error else "running",
            "error": self.error,
            "batch": progress.get("batchId"),
            "inputs": inputs,
            "snapshots": self.snapshots,
            "join_clock": format_instant(join_clock),
            "rows_emitted": emitted,
            "rows_emitted_this_run": emitted - self.emitted_before,
            **self.sink.status(),
            "late_rows": sum(v["late_rows"] for v in inputs.values()),
            "rejected_rows": sum(v["rejected_rows"] for v in inputs.values()),
            "changed_files": sum(v["changed_files"] for v in inputs.values()),
            # Spark's state rows, or for streamjoin's operator the join rows it holds
            "state_rows": self.sink.status().get("operator_state_rows", state_rows(progress))
            + sum(state_rows(r.query.lastProgress or {}) for r in self.upstream),
            "last_batch_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
            "watermark": format_instant(watermark),
            "updated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "started_at": self.started_at,
            "pid": os.getpid(),
            **({"plan": self.plan} if self.plan is not None else {}),
        }

    def write(self, query, final: str | None = None) -> dict:
        snap = self.snapshot(query)
        with self.lock:
            if self.final and not final:
                return snap  # a progress callback that arrives after the query ended
            if final:
                snap["state"] = self.final = final
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(snap, indent=2))
            os.replace(tmp, self.path)
        return snap

    def line(self, snap: dict) -> str:
        reads = " ".join(f"{a}={v['rows_read']}" for a, v in snap["inputs"].items())
        return (
            f"streamjoin: batch {snap['batch']} read {reads} emitted {snap['rows_emitted_this_run']} "
            f"late {snap['late_rows']} state {snap['state_rows']} clock {snap['join_clock']}"
            + (f" rejected {snap['rejected_rows']}" if snap.get("rejected_rows") else "")
            + (f" changed files {snap['changed_files']}" if snap.get("changed_files") else "")
        )


def summary(status: dict) -> str:
    """The last line of a run: `finished: N rows emitted, M late rows`, N this run's; when earlier
    runs of the same checkpoint emitted rows too, their total follows."""
    this_run = status.get("rows_emitted_this_run", status["rows_emitted"])
    total = f" ({status['rows_emitted']} over every run of this checkpoint)" if status["rows_emitted"] != this_run else ""
    rejected = status.get("rejected_rows") or 0
    dead = f", {rejected} rejected rows (rejected/ beside late/: file, line and reason each)" if rejected else ""
    changed = status.get("changed_files") or 0
    if changed:
        dead += f", {changed} input file{'s' * (changed != 1)} changed after being read (not read again; rejected/ names them)"
    return f"{status['state']}: {this_run} rows emitted{total}, {status['late_rows']} late rows{dead}"


def state_rows(progress: dict) -> int:
    return sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", []))


