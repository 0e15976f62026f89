"""Reading a sink's committed hour partitions: what the quality checks and reports use.

    from streamjoin.io.sinks.hours import read_hour
    frame = read_hour("s3://streamjoin/apps/hourly_city_sales/output", "2024-01-01T10")  # pandas
    frame = read_hour(path, hour, engine="spark", spark=spark)                             # Spark

Only committed data is read (Delta Lake's log, or the Parquet sink's commit manifests), and by
default only an hour whose completeness marker exists (`HourNotComplete` otherwise).
"""

from __future__ import annotations

import pyarrow as pa

from streamjoin.io.sinks.table_sink import HOUR, DeltaCommitter, ManifestCommitter, SinkSpec, hour_name, hour_start_us
from streamjoin.io.storage import s3


class HourNotComplete(LookupError):
    """The hour has no completeness marker yet: its rows may still be arriving."""


def normalize_hour(hour: str) -> str:
    """`2024-01-01T10`, `2024-01-01 10:00:00` or `2024-01-01T10:00` -> `2024-01-01T10`."""
    try:
        return hour_name(hour_start_us(hour))
    except ValueError:
        raise ValueError(f"'{hour}' is not an hour: write it as YYYY-MM-DDTHH (e.g. 2024-01-01T10)") from None


def marker(path: str, hour: str, settings: s3.S3Settings | None = None) -> dict | None:
    """The hour's completeness marker, or None."""
    return s3.read_json(s3.join(path, "_complete", f"{HOUR}={normalize_hour(hour)}.json"), settings)


def complete_hours(path: str, settings: s3.S3Settings | None = None) -> list[str]:
    """The hours that have a completeness marker, oldest first."""
    names = [p.rsplit("/", 1)[-1] for p in s3.list_files(s3.join(path, "_complete"), settings)]
    return sorted(n[len(HOUR) + 1:-len(".json")] for n in names if n.startswith(f"{HOUR}=") and n.endswith(".json"))


def table_format(path: str, settings: s3.S3Settings | None = None) -> str:
    return "delta" if s3.list_files(s3.join(path, "_delta_log"), settings) else "parquet"


def read_hour_arrow(path: str, hour: str, settings: s3.S3Settings | None = None, require_complete: bool = True) -> pa.Table:
    """The hour's committed rows as an Arrow table (without the partition column)."""
    settings = settings or s3.S3Settings.from_env()
    hour = normalize_hour(hour)
    if require_complete and marker(path, hour, settings) is None:
        raise HourNotComplete(f"hour {hour} of {path} has no completeness marker yet")
    fmt = table_format(path, settings)
    spec = SinkSpec("reader", s3.normalize(path), fmt, HOUR)
    if fmt == "delta":
        committer = DeltaCommitter(spec, "reader", settings)
        table = committer._table()
        if table is None:
            return pa.table({})
        data = table.to_pyarrow_table(filters=[(HOUR, "=", hour)])
        return data.drop_columns([HOUR]) if HOUR in data.column_names else data
    import pyarrow.parquet as pq

    files = ManifestCommitter(spec, "reader", settings).files(hour)
    parts = []
    for f in files:
        filesystem, inner = s3.resolve(f, settings)
        parts.append(pq.read_table(inner, filesystem=filesystem))
    return pa.concat_tables(parts) if parts else pa.table({})


def read_hour(path: str, hour: str, engine: str = "pandas", spark=None, settings: s3.S3Settings | None = None,
              require_complete: bool = True):
    """The hour's committed rows as a pandas DataFrame (`engine="pandas"`) or a Spark DataFrame
    (`engine="spark"`, with `spark` a SparkSession)."""
    table = read_hour_arrow(path, hour, settings, require_complete)
    if engine == "pandas":
        return table.to_pandas()
    if engine == "spark":
        if spark is None:
            raise ValueError("engine='spark' needs a SparkSession: read_hour(..., spark=spark)")
        return spark.createDataFrame(table)
    raise ValueError(f"engine must be 'pandas' or 'spark', not '{engine}'")
