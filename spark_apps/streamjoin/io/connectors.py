"""The registry of connectors: every `WITH (connector = '...')` streamjoin reads, and every output
address `run --output` writes, with the module that does it. The stager finds a log input's reader
here (`log_reader`), `run`'s output its writer (`writer_for`), and `lower.inputs` / `lower.support`
what a stream may be read from (`STREAM_CONNECTORS`, `LOGS`). A new connector is an entry here
and its reader or writer in io/sources or io/sinks (docs/architecture.md, "Where to add").

Readers and writers are named as "module:Class" and imported on first use: a run that reads files
never imports the Kafka or Kinesis clients.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path


@dataclass(frozen=True)
class Connector:
    name: str  # as a program writes it: WITH (connector = 'NAME')
    stream: bool  # a stream may be read from it (staged: io.sources.staging)
    table: bool  # a table may be read from it whole (lower.tables)
    # a log the stager polls (no files, no path): the InputSpec field holding its options and the
    # reader, built by its `from_spec(spec, parse)`
    log: str | None = None
    reader: str | None = None
    title: str = ""


CONNECTORS: dict[str, Connector] = {c.name: c for c in (
    Connector("files", stream=True, table=True, title="a local folder's files (JSON Lines, CSV, Parquet)"),
    Connector("s3", stream=True, table=True, title="an s3:// landing zone's objects, or a table's snapshots"),
    Connector("kinesis", stream=True, table=False, log="kinesis", reader="streamjoin.io.sources.kinesis:KinesisSource",
              title="a Kinesis data stream's shards"),
    Connector("kafka", stream=True, table=True, log="kafka", reader="streamjoin.io.sources.kafka:KafkaSource",
              title="a Kafka topic's partitions"),
    Connector("postgres-cdc", stream=True, table=False, log="cdc", reader="streamjoin.io.sources.pg_cdc:PostgresCdcSource",
              title="a PostgreSQL table's changes (logical replication)"),
    Connector("postgres", stream=False, table=True, title="a PostgreSQL table, read whole"),
    Connector("values", stream=True, table=True, title="the rows the program itself inserts"),
)}
# what a declared stream may name (`values`, the program's own rows, is accepted beside them)
STREAM_CONNECTORS = tuple(n for n, c in CONNECTORS.items() if c.stream and n != "values")
LOGS = tuple(n for n, c in CONNECTORS.items() if c.log)  # read from a service, not from files: no path


@dataclass(frozen=True)
class Output:
    scheme: str  # the output address's prefix (run --output SCHEME...)
    writer: str  # "module:Class", built as Class(target, checkpoint / folder, suffix)
    folder: str  # where in the checkpoint it records what it sent


OUTPUTS = (
    Output("kafka://", "streamjoin.io.sinks.kafka_sink:TopicWriter", "kafka_sink"),
    Output("kinesis://", "streamjoin.io.sinks.kinesis_sink:StreamWriter", "kinesis_sink"),
)


def load(name: str):
    """A "module:Class" of the registry, imported now."""
    module, _, attribute = name.partition(":")
    return getattr(import_module(module), attribute)


def log_reader(spec, parse):
    """The reader of a log input (`InputSpec` with one log's options set), parsing its records as
    the input's rows; None for an input of files."""
    for connector in CONNECTORS.values():
        if connector.log is not None and getattr(spec, connector.log) is not None:
            return load(connector.reader).from_spec(spec, parse)
    return None


def output_of(target: str) -> Output | None:
    """The registered output an address names (a topic, a stream), or None: JSON Lines (stdout, a folder)."""
    return next((o for o in OUTPUTS if target.startswith(o.scheme)), None)


def writer_for(target: str, suffix: str, checkpoint: Path):
    """The writer of a registered output address, or None."""
    output = output_of(target)
    return None if output is None else load(output.writer)(target, checkpoint / output.folder, suffix)
