"""How to read one stream input (`InputSpec`): what a query's planner hands the stager
(`io.sources.staging`) and, as JSON, Spark's workers."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.ipc as ipc


@dataclass(frozen=True)
class InputSpec:
    """How to read one stream input: its files and schema (Arrow), its rowtime and lateness."""

    alias: str
    path: str
    format: str
    schema: pa.Schema
    rowtime: str
    lateness_ms: int
    state_dir: str  # under the checkpoint: manifest and staged steps
    late_dir: str  # the late-rows output of this input
    # an s3:// path: S3Settings fields (endpoint_url, access_key, secret_key, region) read on the
    # driver; None: the stager reads the AWS_* variables of its own process
    storage: dict | None = None
    # connector 'kinesis' (path kinesis://STREAM): stream, start, start_timestamp_us, idle_ms
    kinesis: dict | None = None
    # connector 'kafka' (path kafka://TOPIC): io.sources.kafka's options (bootstrap, topic, start, fills, ...)
    kafka: dict | None = None
    # connector 'postgres-cdc' (path postgres-cdc://SCHEMA.TABLE): io.sources.pg_cdc's options (connection, table, slot, ...)
    cdc: dict | None = None
    on_error: str = "dead_letter"  # a row that cannot be read: 'dead_letter' (set aside) or 'fail'
    # a row whose rowtime is further than this ahead of the wall clock when read is set aside as
    # unreadable (one bad clock must not move the watermark past every other row); None: no limit
    future_limit_ms: int | None = None
    # files: a regular expression a file's name must match whole (s-Server FILENAME_PATTERN); None: every file
    pattern: str | None = None
    # the rowtime is the instant the stager reads each row, whatever the row holds (a RisingWave
    # source that declares no time): rows come in arrival order and none is late
    arrival: bool = False
    # a table fed by its changes: "debezium" (io.sources.changelog; its schema ends with CHANGE); None: rows
    changelog: str | None = None

    @property
    def remote(self) -> bool:
        """Read over the network (Kafka, Kinesis, PostgreSQL CDC, S3): every poll is a request."""
        return any(c is not None for c in (self.kafka, self.kinesis, self.cdc)) or "://" in self.path

    def to_json(self) -> str:
        d = {
            "alias": self.alias,
            "path": self.path,
            "format": self.format,
            "schema": self.schema.serialize().to_pybytes().hex(),
            "rowtime": self.rowtime,
            "lateness_ms": self.lateness_ms,
            "state_dir": self.state_dir,
            "late_dir": self.late_dir,
        }
        if self.storage is not None:
            d["storage"] = self.storage
        if self.kinesis is not None:
            d["kinesis"] = self.kinesis
        if self.kafka is not None:
            d["kafka"] = self.kafka
        if self.cdc is not None:
            d["cdc"] = self.cdc
        d["on_error"] = self.on_error
        d["future_limit_ms"] = self.future_limit_ms
        if self.pattern is not None:
            d["pattern"] = self.pattern
        if self.arrival:
            d["arrival"] = True
        if self.changelog:
            d["changelog"] = self.changelog
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> InputSpec:
        d = json.loads(text)
        d["schema"] = ipc.read_schema(pa.py_buffer(bytes.fromhex(d["schema"])))
        return cls(**d)
