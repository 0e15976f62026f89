"""The stream inputs a query stages (`io.sources.staging.InputSpec`): its own declared streams and, under
`view.alias`, those of the stream views it reads."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from streamjoin.env import expand
from streamjoin.errors import Unsupported
from streamjoin.io.formats.types import arrow_schema
from streamjoin.io.sources.kinesis import settings_from_env
from streamjoin.io.sources.staging import InputSpec
from streamjoin.io.storage.s3 import S3Settings, is_s3
from streamjoin.lower.columns import folder
from streamjoin.plan.model import Kind, Query, Relation, Script
from streamjoin.plan.windows import interval_ms


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
        kafka = kafka_options(r) if connector == "kafka" else None
        cdc = cdc_options(r, str(checkpoint / "sources" / folder(key))) if connector == "postgres-cdc" else None
        path = (f"kinesis://{kinesis['stream']}" if kinesis else f"kafka://{kafka['topic']}" if kafka
                else f"postgres-cdc://{cdc['schema']}.{cdc['table']}" if cdc
                else seed_folder(r, checkpoint / "sources" / folder(key)) if connector == "values" else expand(r.option("path")))
        check_stream_path(r, connector, path)
        specs.append(
            InputSpec(
                alias=key,
                path=path,
                format=(r.option("format") or "json").lower(),
                schema=_schema(r),
                rowtime=r.rowtime,
                lateness_ms=r.lateness_ms,
                state_dir=str(checkpoint / "sources" / folder(key)),
                late_dir=str(late_root / folder(key)),
                # read when the query is planned: the stager uses these (docs/storage.md)
                storage=asdict(S3Settings.from_env()) if is_s3(path) else (settings_from_env() if kinesis else None),
                kinesis=kinesis,
                kafka=kafka,
                cdc=cdc,
                on_error=on_error(r),
                future_limit_ms=interval_ms(r.option("future_limit"), None) if r.option("future_limit") else None,
                pattern=r.option("pattern"),
                arrival=r.arrival_rowtime,
                changelog=r.option("changelog") if r.changing else None,
            )
        )
    return specs


def seed_folder(relation: Relation, state_dir: Path) -> str:
    """A stream's rows the program inserted (`INSERT INTO s VALUES`: RisingWave's APPEND ONLY
    table), in the order inserted, as one JSON Lines file in the input's state folder, read as
    any files input. A restart finds the same file; if the INSERTs (or a DEFAULT NOW()) give other
    rows, the file is replaced and the stager reports it changed, as for any input file."""
    import json
    import os

    text = "".join(json.dumps(row) + "\n" for row in json.loads(relation.option("rows") or "[]"))
    seeds = state_dir / "seeded"
    target = seeds / "rows.json"
    if not target.exists() or target.read_text() != text:
        seeds.mkdir(parents=True, exist_ok=True)
        tmp = seeds / ".rows.json.tmp"
        tmp.write_text(text)
        os.replace(tmp, target)
    return str(seeds)


def _schema(relation: Relation):
    """The staged columns: the declared ones, and a changing table's CHANGE (io.sources.changelog)."""
    import pyarrow as pa

    from streamjoin.io.sources.changelog import CHANGE

    schema = arrow_schema(relation.columns)
    if relation.changing:
        kafka = (relation.option("connector") or "").lower() == "kafka"
        if relation.option("changelog") not in ("debezium", "cdc") and not kafka:
            raise Unsupported(f"table '{relation.name}': FORMAT {relation.option('changelog').upper()} is read from Kafka "
                              "topics' keys (connector = 'kafka'); from files, write Debezium events (FORMAT DEBEZIUM ENCODE JSON)")
        schema = schema.append(pa.field(CHANGE, pa.string()))
    return schema


def on_error(relation: Relation) -> str:
    """What a row of this stream that cannot be read does: 'dead_letter' (the default) or 'fail'."""
    from streamjoin.io.sources.rejects import ON_ERROR

    chosen = (relation.option("on_error") or "dead_letter").lower()
    if chosen not in ON_ERROR:
        raise Unsupported(f"stream '{relation.name}': on_error = '{chosen}': use 'dead_letter' (set bad rows aside "
                          "under rejected/) or 'fail' (stop at the first, naming file, line and column)")
    return chosen


def kinesis_options(relation: Relation) -> dict:
    """A Kinesis stream's WITH options, checked (io.sources.kinesis)."""
    import datetime as dt

    from streamjoin.io.sources.kinesis import STARTS

    stream = expand(relation.option("stream") or "")
    if not stream:
        raise Unsupported(f"stream '{relation.name}': connector 'kinesis' needs stream = 'NAME' (the Kinesis stream)")
    mode = (relation.option("scan.startup.mode") or "").lower()  # RisingWave's spelling
    start = (relation.option("start") or {"earliest": "trim_horizon", "timestamp": "at_timestamp"}.get(mode, mode) or "trim_horizon").lower()
    if start not in STARTS:
        raise Unsupported(f"stream '{relation.name}': start = '{start}': use {', '.join(STARTS)}")
    start_us = None
    if start == "at_timestamp":
        millis = relation.option("scan.startup.timestamp.millis") or relation.option("scan.startup.timestamp_millis")
        text = expand(relation.option("start_timestamp") or "") or (
            dt.datetime.fromtimestamp(int(millis) / 1000, dt.UTC).isoformat() if millis and millis.isdigit() else "")
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
    idle_ms = duration_option(relation, "idle_timeout", 10_000)
    fills = {k.removeprefix("include."): v for k, v in relation.options if k.startswith("include.")}
    return {"stream": stream, "start": start, "start_timestamp_us": start_us, "idle_ms": idle_ms, "fills": fills}


def duration_option(relation: Relation, name: str, default_ms: int, kind: str = "stream") -> int:
    """A WITH option that is an interval (`idle_timeout = '1 SECOND'`), in ms; `default_ms` without it."""
    if not relation.option(name):
        return default_ms
    try:
        return interval_ms(relation.option(name), None)
    except ValueError as error:
        raise Unsupported(f"{kind} '{relation.name}': bad {name}: {error}") from None


def kafka_options(relation: Relation) -> dict:
    """A Kafka topic's WITH options, checked (io.sources.kafka), in each dialect's words: RisingWave's
    topic, properties.bootstrap.server, scan.startup.mode (earliest | latest | timestamp),
    scan.startup.timestamp.millis; s-Server's TOPIC, SEED_BROKERS, STARTING_TIME (EARLIEST |
    LATEST | a timestamp); streamjoin's start, start_timestamp, idle_timeout, broker_timeout. A
    Lenses topic is read by its name. STREAMJOIN_KAFKA_BOOTSTRAP overrides the brokers."""
    import datetime as dt

    from streamjoin.io.sources.kafka import STARTS
    from streamjoin.io.storage.kafka_client import bootstrap

    def option(*names: str) -> str:
        return next((expand(relation.option(n)) for n in names if relation.option(n)), "")

    topic = option("topic", "kafka_topic") or relation.name
    servers = bootstrap(option("properties.bootstrap.server", "properties.bootstrap.servers", "bootstrap.servers",
                               "seed_brokers", "bootstrap_servers") or None)
    start = option("start", "scan.startup.mode", "starting_time", "auto.offset.reset").lower() or "earliest"
    start = {"smallest": "earliest", "largest": "latest", "beginning": "earliest", "end": "latest"}.get(start, start)
    start_us = None
    millis = option("scan.startup.timestamp.millis", "scan.startup.timestamp_millis")
    text = option("start_timestamp") or (start if start not in STARTS else "")
    if millis:
        start, start_us = "timestamp", int(millis) * 1000
    elif text:
        try:
            at = dt.datetime.fromisoformat(text.replace("/", "-"))
        except ValueError:
            raise Unsupported(f"stream '{relation.name}': start '{text}' is not earliest, latest or a timestamp "
                              "(YYYY-MM-DD HH:MM:SS)") from None
        at = at if at.tzinfo else at.replace(tzinfo=dt.UTC)  # a rowtime's zone: UTC
        start, start_us = "timestamp", int(at.timestamp() * 1_000_000)
    elif start == "timestamp":
        raise Unsupported(f"stream '{relation.name}': start = 'timestamp' needs scan.startup.timestamp.millis or "
                          "start_timestamp = 'YYYY-MM-DD HH:MM:SS'")
    if (relation.option("format") or "json").lower() != "json":
        raise Unsupported(f"stream '{relation.name}': a Kafka record's value is read as JSON (ENCODE JSON, format = "
                          f"'json'), not {relation.option('format')}")
    durations = {name: duration_option(relation, name, default) for name, default in (("idle_timeout", 10_000), ("broker_timeout", 60_000))}
    return {"topic": topic, "bootstrap": servers, "start": start, "start_timestamp_us": start_us,
            "idle_ms": durations["idle_timeout"], "broker_timeout_ms": durations["broker_timeout"],
            "fills": kafka_fills(relation), "changelog": relation.option("changelog") if relation.changing else None}


def cdc_options(relation: Relation, state_dir: str) -> dict:
    """A postgres-cdc table's WITH options, checked (io.sources.pg_cdc), in RisingWave's words: hostname,
    port, username, password, database.name, schema.name, table.name, slot.name,
    publication.name, publication.create.enable; streamjoin's broker_timeout."""
    from streamjoin.io.sources.pg_cdc import connection, slot_name

    options = {k: expand(v) for k, v in relation.options if not (v or "").startswith("secret ")}
    options.update({k: v for k, v in relation.options if (v or "").startswith("secret ")})
    table = options.get("table.name") or relation.name
    if not relation.changing:
        raise Unsupported(f"stream '{relation.name}': a postgres-cdc source is read through its tables: declare each "
                          f"CREATE TABLE t (..., PRIMARY KEY (id)) FROM {relation.name} TABLE 'schema.t'")
    if not relation.primary_key:
        raise Unsupported(f"table '{relation.name}': a postgres-cdc table changes rows by their primary key: declare it")
    timeout = duration_option(relation, "broker_timeout", 60_000, "table")
    return {"connection": connection(options), "schema": options.get("schema.name") or "public", "table": table,
            "columns": [c.name for c in relation.columns if c.name != relation.rowtime or not relation.implicit_rowtime],
            "key": list(relation.primary_key), "slot": slot_name(options.get("slot.name"), state_dir),
            "publication": options.get("publication.name") or "rw_publication",
            "create_publication": (options.get("publication.create.enable") or "true").lower() != "false",
            "broker_timeout_ms": timeout}


def kafka_fills(relation: Relation) -> dict[str, str]:
    """The columns a record's metadata fills: RisingWave's INCLUDE columns (`include.<column>`
    options), Lenses' `_key`, `_value` (a value that is no JSON object) and `_meta`, and an implicit ROWTIME the value does not hold (the record's
    timestamp; '?' marks a fill only where the value gave none)."""
    fills = {k.removeprefix("include."): v for k, v in relation.options if k.startswith("include.")}
    names = [c.name for c in relation.columns]
    for column, what in (("_key", "key"), ("_value", "value"), ("_meta", "meta")):  # Lenses' facets
        if column in names and column not in fills:
            fills[column] = what
    if relation.implicit_rowtime and not relation.arrival_rowtime:
        fills["?" + relation.rowtime] = "timestamp"
    return fills


def check_stream_path(relation: Relation, connector: str, path: str) -> None:
    """connector 'files' reads a local folder, connector 's3' an s3:// prefix (a landing zone),
    connector 'kinesis' a Kinesis stream (its path is kinesis://STREAM)."""
    if connector == "s3" and not is_s3(path):
        raise Unsupported(f"stream '{relation.name}': connector 's3' needs path = 's3://bucket/prefix/', not '{path}'")
    if connector == "files" and is_s3(path):
        raise Unsupported(f"stream '{relation.name}': path '{path}' is in S3: use connector = 's3'")


def csv_problem(relation: Relation) -> str | None:
    """CSV is read with a header row naming the columns, split at ','; anything else is refused."""
    if (relation.option("without_header") or "").lower() == "true" or (relation.option("delimiter") or ",") != ",":
        return (f"stream '{relation.name}': CSV files are read with a header row naming the columns, split at ',' "
                "(ENCODE CSV (without_header = 'true') or another delimiter is not supported yet)")
    return None
