"""The stream inputs a query stages (`io.staging.InputSpec`): its own declared streams and, under
`view.alias`, those of the stream views it reads."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from streamjoin.env import expand
from streamjoin.errors import Unsupported
from streamjoin.io.s3 import S3Settings, is_s3
from streamjoin.io.staging import InputSpec
from streamjoin.io.types import arrow_schema
from streamjoin.plan.model import Kind, Query, Relation, Script

STREAM_CONNECTORS = ("files", "s3")


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
        path = expand(r.option("path"))
        check_stream_path(r, (r.option("connector") or "files").lower(), path)
        specs.append(
            InputSpec(
                alias=key,
                path=path,
                format=(r.option("format") or "json").lower(),
                schema=arrow_schema(r.columns),
                rowtime=r.rowtime,
                lateness_ms=r.lateness_ms,
                state_dir=str(checkpoint / "sources" / key),
                late_dir=str(late_root / key),
                # read when the query is planned: the stager uses these (docs/storage.md)
                storage=asdict(S3Settings.from_env()) if is_s3(path) else None,
            )
        )
    return specs


def check_stream_path(relation: Relation, connector: str, path: str) -> None:
    """connector 'files' reads a local folder, connector 's3' an s3:// prefix (a landing zone)."""
    if connector == "s3" and not is_s3(path):
        raise Unsupported(f"stream '{relation.name}': connector 's3' needs path = 's3://bucket/prefix/', not '{path}'")
    if connector == "files" and is_s3(path):
        raise Unsupported(f"stream '{relation.name}': path '{path}' is in S3: use connector = 's3'")
