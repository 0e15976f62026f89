"""What the hourly quality gate (`streamjoin.quality`) compares an hour with, besides its own rows:
the complete hours before it (their input volume and silent share) and the hour's late rows (the
app's late-rows output)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from streamjoin.io.sinks import hours
from streamjoin.io.storage import s3


def trailing_volumes(output: str, hour: str, quality: dict, settings: s3.S3Settings | None = None,
                     silent: list[float] | None = None) -> list[float]:
    """The input volume (`[quality] volume_measure` summed) of each complete hour among the
    `volume_trailing_hours` (default 6) before `hour`: what the hour's own volume is compared with.
    Empty without a volume measure or without earlier complete hours. `silent`, if given, gets
    each of those hours' silent share (rows whose volume measure is NULL: cities that sold nothing)."""
    measure = quality.get("volume_measure")
    if not measure:
        return []
    import pyarrow.compute as pc

    start = dt.datetime.strptime(hour, "%Y-%m-%dT%H")
    volumes = []
    for back in range(1, int(quality.get("volume_trailing_hours", 6)) + 1):
        earlier = (start - dt.timedelta(hours=back)).strftime("%Y-%m-%dT%H")
        if hours.marker(output, earlier, settings) is None:
            continue
        rows = hours.read_hour_arrow(output, earlier, settings)
        present = measure in rows.column_names
        volumes.append(float(pc.sum(rows.column(measure)).as_py() or 0) if present else 0.0)
        if silent is not None and present and rows.num_rows:
            silent.append(rows.column(measure).null_count / rows.num_rows)
    return volumes


def late_rows_of_hour(config: dict, root: Path, hour: str, config_error=ValueError) -> int | None:
    """How many rows of `[quality] late_input` whose rowtime (`late_rowtime`) lies in `hour` came
    late: the input's late-rows output (`<checkpoint>/late/<input>/late-*.jsonl`, what the app set
    aside, counted now: rows that come late after this check are not). None without `late_input`."""
    quality = config["quality"]
    alias, rowtime = quality.get("late_input"), quality.get("late_rowtime")
    if not alias or not rowtime:
        return None
    checkpoint = os.environ.get(f"{config.get('env_prefix', '')}CHECKPOINT_PATH") or config.get("paths", {}).get("checkpoint")
    if not checkpoint:
        raise config_error("[quality] late_input needs the app's checkpoint ([paths] checkpoint or CHECKPOINT_PATH)")
    folder = (Path(checkpoint) if Path(checkpoint).is_absolute() else root / checkpoint) / "late" / alias
    prefix = hour.replace("T", " ")  # rowtimes are written YYYY-MM-DD HH:MM:SS.fff
    count = 0
    for path in sorted(folder.glob("late-*.jsonl")):
        for line in path.read_text().splitlines():
            value = json.loads(line).get(rowtime) if line.strip() else None
            count += isinstance(value, str) and value.startswith(prefix)
    return count
