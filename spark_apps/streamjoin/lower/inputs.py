"""The stream inputs a query stages (`io.staging.InputSpec`): its own declared streams and, under
`view.alias`, those of the stream views it reads."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from streamjoin.env import expand
from streamjoin.errors import Unsupported
from streamjoin.io.kinesis import settings_from_env
from streamjoin.io.s3 import S3Settings, is_s3
from streamjoin.io.staging import InputSpec
from streamjoin.io.types import arrow_schema
from streamjoin.plan.model import Kind, Query, Relation, Script
from streamjoin.plan.windows import interval_ms

STREAM_CONNECTORS = ("files", "s3", "kinesis")


def input_specs(script: Script, query: Query, checkpoint: Path, late_root: Path, prefix: str = "") -> list[InputSpec]:
    """The stream inputs to stage: the query's own and, under `view.alias`, its views' inputs."""
    specs = []
    for i in query.inputs:
        r = script.relation(i.relation)
        if r.view:
            if script.view(r.name).kind == Kind.STREAM:
                specs += input_specs(script, script.view(r.name), checkpoint, late_root, f"{prefix}{r.name}.")
            continue
        if i.kind != Kind.STREAM:
            continue
        key = prefix + i.alias
        connector = (r.option("connector") or "files").lower()
        kinesis = kinesis_options(r) if connector == "kinesis" else None
        path = f"kinesis://{kinesis['stream']}" if kinesis else expand(r.option("path"))
        check_stream_path(r, connector, path)
        specs.append(
            InputSpec(
                alias=key,
                path=path,
                format=(r.option("format") or "json").lower(),
                schema=_schema(r),
                rowtime=r.rowtime,
                lateness_ms=r.lateness_ms,
                state_dir=str(checkpoint / "sources" / key),
                late_dir=str(late_root / key),
                # read when the query is planned: the stager uses these (docs/storage.md)
                storage=asdict(S3Settings.from_env()) if is_s3(path) else (settings_from_env() if kinesis else None),
                kinesis=kinesis,
                on_error=on_error(r),
                future_limit_ms=interval_ms(r.option("future_limit"), None) if r.option("future_limit") else None,
                pattern=r.option("pattern"),
                arrival=r.arrival_rowtime,
                changelog=r.option("changelog") if r.changing else None,
            )
        )
    return specs


def _schema(relation: Relation):
    """The staged columns: the declared ones, and a changing table's CHANGE (io.changelog)."""
    import pyarrow as pa

    from streamjoin.io.changelog import CHANGE

    schema = arrow_schema(relation.columns)
    if relation.changing:
        if relation.option("changelog") != "debezium":
            raise Unsupported(f"table '{relation.name}': FORMAT {relation.option('changelog').upper()} is read from Kafka "
                              "topics' keys (issue 41); from files, write Debezium events (FORMAT DEBEZIUM ENCODE JSON)")
        schema = schema.append(pa.field(CHANGE, pa.string()))
    return schema


def on_error(relation: Relation) -> str:
    """What a row of this stream that cannot be read does: 'dead_letter' (the default) or 'fail'."""
    from streamjoin.io.rejects import ON_ERROR

    chosen = (relation.option("on_error") or "dead_letter").lower()
    if chosen not in ON_ERROR:
        raise Unsupported(f"stream '{relation.name}': on_error = '{chosen}': use 'dead_letter' (set bad rows aside "
                          "under rejected/) or 'fail' (stop at the first, naming file, line and column)")
    return chosen


def kinesis_options(relation: Relation) -> dict:
    """A Kinesis stream's WITH options, checked (io.kinesis)."""
    import datetime as dt

    from streamjoin.io.kinesis import STARTS

    stream = expand(relation.option("stream") or "")
    if not stream:
        raise Unsupported(f"stream '{relation.name}': connector 'kinesis' needs stream = 'NAME' (the Kinesis stream)")
    start = (relation.option("start") or "trim_horizon").lower()
    if start not in STARTS:
        raise Unsupported(f"stream '{relation.name}': start = '{start}': use {', '.join(STARTS)}")
    start_us = None
    if start == "at_timestamp":
        text = expand(relation.option("start_timestamp") or "")
        if not text:
            raise Unsupported(f"stream '{relation.name}': start = 'at_timestamp' needs start_timestamp = 'YYYY-MM-DD HH:MM:SS'")
        try:
            at = dt.datetime.fromisoformat(text)
            at = at if at.tzinfo else at.replace(tzinfo=dt.UTC)  # a rowtime's zone: UTC
            start_us = int(at.timestamp() * 1_000_000)
        except ValueError:
            raise Unsupported(f"stream '{relation.name}': start_timestamp '{text}' is not a timestamp (YYYY-MM-DD HH:MM:SS)") from None
    if (relation.option("format") or "json").lower() != "json":
        raise Unsupported(f"stream '{relation.name}': a Kinesis stream's records are read as JSON (format = 'json')")
    idle_ms = 10_000
    if relation.option("idle_timeout"):
        from streamjoin.plan.windows import interval_ms

        try:
            idle_ms = interval_ms(relation.option("idle_timeout"), None)
        except ValueError as error:
            raise Unsupported(f"stream '{relation.name}': bad idle_timeout: {error}") from None
    return {"stream": stream, "start": start, "start_timestamp_us": start_us, "idle_ms": idle_ms}


def check_stream_path(relation: Relation, connector: str, path: str) -> None:
    """connector 'files' reads a local folder, connector 's3' an s3:// prefix (a landing zone),
    connector 'kinesis' a Kinesis stream (its path is kinesis://STREAM)."""
    if connector == "s3" and not is_s3(path):
        raise Unsupported(f"stream '{relation.name}': connector 's3' needs path = 's3://bucket/prefix/', not '{path}'")
    if connector == "files" and is_s3(path):
        raise Unsupported(f"stream '{relation.name}': path '{path}' is in S3: use connector = 's3'")
