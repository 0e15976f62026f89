"""RisingWave's table sinks over tables only: `CREATE SINK s INTO t (a, b) AS SELECT ...` into a
table t the program holds (declared without a connector; its wide-table pattern: one sink
decides t's rows, others fill its columns). Each sink's query runs as one batch over the tables
as they stand (runtime.pipeline.run_table_query's reading), and its rows are merged into t in
the file's order of the sinks, by t's primary key, as t's `ON CONFLICT` says:

- `DO UPDATE IF NOT NULL`: a row of a key t holds sets the columns the sink writes that are not NULL;
- `DO NOTHING`: t keeps the row it holds;
- otherwise (`DO UPDATE FULL`, RisingWave's default): the row replaces it, the columns the sink
  does not write NULL.

A table without a primary key appends every row. `run` then writes t's rows once (the output
named t): what RisingWave's table holds after the sinks' rows are in."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from streamjoin.plan.model import Query, Script


def run_table_sinks(spark, script: Script, target: str, sinks: list[Query], checkpoint: Path, output: str,
                    query_file: str, suffix: str = "") -> dict:
    """Merge the sinks' rows into `target` and write its rows; the status of `target`'s output."""
    import pyarrow as pa

    from streamjoin.io.formats.types import arrow_schema
    from streamjoin.io.sinks.writer import row_writer
    from streamjoin.io.sources.tables import read_table
    from streamjoin.lower.native import NativeLowering

    table = script.relation(target)
    schema = arrow_schema(table.columns)
    columns = [c.name for c in table.columns]
    key = list(table.primary_key)
    replace_row, _, non_null = _conflict(table.option("on_conflict"), target)
    held: dict = {}
    appended: list[dict] = []
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    checkpoint.mkdir(parents=True, exist_ok=True)
    # rows the program inserted into t itself, then each sink's, all of t's column types
    batches = [read_table(target, {"connector": "values", "rows": table.option("rows") or "[]"}, schema).rows.to_pylist()]
    for q in sinks:
        batches.append(_typed(NativeLowering(spark, script, {}, checkpoint).table_frame(q).toArrow(), schema, q.name).to_pylist())
    for rows in batches:
        for row in rows:
            written = {c: v for c, v in row.items() if c in columns}
            full = {c: written.get(c) for c in columns}
            if not key:
                appended.append(full)
                continue
            k = tuple(full[c] for c in key)
            if k not in held or replace_row:
                held[k] = full
            elif non_null:
                held[k].update({c: v for c, v in written.items() if v is not None})
            # else (IGNORE, DO NOTHING): t keeps the row it holds
    rows = list(held.values()) + appended
    result = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
    if suffix:  # one output of several: its rows led by their stream key, as every output's are
        result = result.add_column(0, "stream", pa.array([target] * result.num_rows, pa.string()))
    row_writer(output, suffix, checkpoint).write_table("part-00000000", result)
    status = {"query": f"{query_file} ({target})", "state": "finished", "error": None, "inputs": {},
              "rows_emitted": result.num_rows, "rows_emitted_this_run": result.num_rows, "late_rows": 0, "rejected_rows": 0,
              "sinks": [q.name for q in sinks], "started_at": started,
              "updated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    (checkpoint / "status.json").write_text(json.dumps(status, indent=1))
    return status


def _conflict(option: str | None, target: str) -> tuple[bool, bool, bool]:
    """(a later row replaces the row, the first row stays, only non-NULL columns update) from t's
    ON CONFLICT: OVERWRITE / DO UPDATE FULL (RisingWave's default), IGNORE / DO NOTHING, DO UPDATE
    IF NOT NULL; another is refused, naming it."""
    from streamjoin.errors import Unsupported

    text = " ".join((option or "DO UPDATE FULL").upper().split())
    if text in ("OVERWRITE", "DO UPDATE FULL", "DO UPDATE"):
        return True, False, False
    if text in ("IGNORE", "DO NOTHING"):
        return False, True, False
    if text == "DO UPDATE IF NOT NULL":
        return False, False, True
    raise Unsupported(f"table '{target}': ON CONFLICT {option} is not carried out by table sinks (use DO UPDATE FULL, "
                      "DO NOTHING or DO UPDATE IF NOT NULL)")


def _typed(rows, schema, sink: str):
    """A sink's rows (Arrow) with t's column types, the columns it writes only."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pa.table({c: pc.cast(rows.column(c), schema.field(c).type, safe=False) for c in rows.column_names if c in schema.names})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise ValueError(f"sink '{sink}': its rows do not fit the table's column types: {str(error).splitlines()[0]}") from None
