"""What a checkpoint must be for this streamjoin to resume it. A checkpoint records the format
it was written in (`format.json`); one written before the engine-time change (2026-11-24: Spark's
event time is the rowtime plus `io.formats.instants.SHIFT_US`, and its state and watermark hold engine
times), or before staged steps were Spark's file source (2026-11-23), is refused with the reason,
before any part of the query starts: resuming it would mix two notions of time."""

from __future__ import annotations

import json
from pathlib import Path

from streamjoin.errors import CheckpointMismatch

FORMAT = 2  # 2: engine time (io.formats.instants); 1 (no file): rowtimes as Spark's event time


def check_resumable(checkpoint: Path) -> None:
    """Raise ValueError when `checkpoint` holds a query this streamjoin cannot resume."""
    spark = checkpoint / "spark"
    offsets = [p for p in (spark / "offsets").glob("*") if p.name.isdigit()]
    if not offsets:
        return  # nothing has run on it yet
    if '{"steps":' in max(offsets, key=lambda p: int(p.name)).read_text():
        raise ValueError(f"{checkpoint} was written by an earlier streamjoin (its inputs' offsets are "
                         "the old staged source's): start this query on a new checkpoint")
    if written_format(checkpoint) < FORMAT:
        raise ValueError(f"{checkpoint} was written by an earlier streamjoin (its Spark state holds rowtimes, not the "
                         "engine times of io.formats.instants): start this query on a new checkpoint")


def clear_interrupted_writes(checkpoint: Path) -> list[str]:
    """Remove what a killed process left half-written in Spark's offset and commit logs: Spark
    writes `.N.<uuid>.tmp` and renames it to `N`, so a temporary file there is never part of the
    log. Left in place, one from the query's very first batch makes Spark refuse to start
    (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY: offsets should be empty on batch 0). Only one
    process runs on a checkpoint (the app runner refuses a second), so none is being written."""
    removed = []
    for log in ("offsets", "commits"):
        for path in (checkpoint / "spark" / log).glob(".*.tmp*"):
            path.unlink(missing_ok=True)
            removed.append(f"{log}/{path.name}")
    return removed


def ran_on(checkpoint: Path) -> str | None:
    """What ran the query on `checkpoint` before: "spark" (a Spark streaming query: Spark's join,
    streamjoin's operator; its offsets), "batch" (the batch interval join: the steps it joined,
    in output/state.json), or None (nothing has run on it yet). A resumed query must run on the
    same (`lower.physical.resumed`): the other would join the staged input again from its first
    step. Read from what each engine leaves, so that a checkpoint started before plan.json was
    recorded (`recorded_plan`) answers the same."""
    if any(p.name.isdigit() for p in (checkpoint / "spark" / "offsets").glob("*")):
        return "spark"
    state = checkpoint / "output" / "state.json"
    if state.exists() and json.loads(state.read_text()).get("join"):
        return "batch"
    return None


def logged_batches(checkpoint: Path) -> tuple[int | None, int | None]:
    """(the last micro-batch in Spark's offset log: planned, the last in its commit log: done), each
    None when the log holds none. Spark plans batch N+1 only after N is done, so done >= planned - 1."""
    def last(log: str) -> int | None:
        ids = [int(p.name) for p in (checkpoint / "spark" / log).glob("*") if p.name.isdigit()]
        return max(ids) if ids else None

    return last("offsets"), last("commits")


def stamp(checkpoint: Path, plan: dict | None = None) -> None:
    """Record the format this streamjoin writes, and the physical plan that runs the query
    (lower.physical.PhysicalPlan.to_dict, in plan.json), once its query starts."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / "format.json").write_text(json.dumps({"format": FORMAT}))
    if plan is not None:
        (checkpoint / "plan.json").write_text(json.dumps(plan, indent=1))


def check_plan(checkpoint: Path, plan: dict | None) -> None:
    """Refuse to resume a query whose operator would read the checkpoint's state otherwise than it
    was written: another number of hash groups (`STREAMJOIN_OPERATOR_GROUPS`: a key's rows would
    meet another group's state), or a join the column engine ran now row by row
    (`STREAMJOIN_OPERATOR_COLUMNAR=0`: the row engine cannot read the column engine's state; the
    other way the column engine converts it). CheckpointMismatch names both."""
    recorded = recorded_plan(checkpoint)
    if plan is None or recorded is None or not (recorded.get("engine") == plan.get("engine") == "operator"):
        return
    was, now = [j.get("by_column") for j in recorded.get("joins", [])], [j.get("by_column") for j in plan.get("joins", [])]
    back = any(w and not n for w, n in zip(was, now, strict=False))
    if recorded.get("operator_groups") != plan.get("operator_groups") or back:
        raise CheckpointMismatch(
            f"checkpoint {checkpoint} was run by streamjoin's operator with {recorded.get('operator_groups') or 1} hash "
            f"group(s) and {_engines(was)}; this run would use {plan.get('operator_groups') or 1} and {_engines(now)}, "
            "which cannot read its state. Nothing was run: set STREAMJOIN_OPERATOR_GROUPS and STREAMJOIN_OPERATOR_COLUMNAR "
            "as they were, or start the query on a new checkpoint.")


def _engines(columns: list) -> str:
    return ", ".join(f"join {n}: " + (f"by column ({c})" if c else "row by row") for n, c in enumerate(columns, 1))


def recorded_plan(checkpoint: Path) -> dict | None:
    """The physical plan the query on `checkpoint` last started with (`stamp`), or None."""
    path = checkpoint / "plan.json"
    return json.loads(path.read_text()) if path.exists() else None


def written_format(checkpoint: Path) -> int:
    path = checkpoint / "format.json"
    return int(json.loads(path.read_text()).get("format", 1)) if path.exists() else 1
