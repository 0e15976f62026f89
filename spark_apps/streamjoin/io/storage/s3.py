"""S3-compatible storage, configured only through the standard AWS variables.

`AWS_ENDPOINT_URL` (unset for AWS itself; `http://127.0.0.1:9000` for the embedded server or
MinIO), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`. The same code runs against
AWS, MinIO and `streamjoin s3 serve`. Paths are `s3://bucket/key`; a plain path is a local
folder, which every helper here accepts too (handy for tests and laptops).

The settings are read once on the driver and passed to executors explicitly (`S3Settings` is
picklable), so Spark's Python workers need no environment of their own.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from urllib.parse import urlparse


@dataclass(frozen=True)
class S3Settings:
    endpoint_url: str | None
    access_key: str | None
    secret_key: str | None
    region: str

    @classmethod
    def from_env(cls, env=None) -> S3Settings:
        env = os.environ if env is None else env
        return cls(
            endpoint_url=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
            access_key=env.get("AWS_ACCESS_KEY_ID") or None,
            secret_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
        )

    def filesystem(self):
        """A pyarrow S3 filesystem for these settings."""
        from pyarrow import fs

        scheme, endpoint = None, None
        if self.endpoint_url:
            parsed = urlparse(self.endpoint_url)
            scheme, endpoint = parsed.scheme or "http", parsed.netloc or parsed.path
        return fs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            region=self.region,
            scheme=scheme,
            endpoint_override=endpoint,
            connect_timeout=5,
            request_timeout=30,
        )

    def storage_options(self) -> dict[str, str]:
        """Options for deltalake (delta-rs object_store).

        One query writes each table, so delta-rs may commit with S3's plain rename
        (`AWS_S3_ALLOW_UNSAFE_RENAME`): there is no concurrent writer to race (docs/storage.md).
        """
        options = {"AWS_REGION": self.region, "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
        if self.endpoint_url:
            options["AWS_ENDPOINT_URL"] = self.endpoint_url
            if self.endpoint_url.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"
        if self.access_key:
            options["AWS_ACCESS_KEY_ID"] = self.access_key
        if self.secret_key:
            options["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        return options

    def client(self):
        """A boto3 S3 client for these settings."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )


def is_s3(path: str) -> bool:
    return path.startswith(("s3://", "s3a://"))


def normalize(path: str) -> str:
    """`s3a://` is read as `s3://`; a trailing slash is dropped (a prefix names a folder)."""
    if path.startswith("s3a://"):
        path = "s3://" + path[len("s3a://"):]
    return path.rstrip("/") if len(path.rstrip("/")) > len("s3://") else path


def split(path: str) -> tuple[str, str]:
    """`s3://bucket/key/part` -> ('bucket', 'key/part')."""
    parsed = urlparse(normalize(path))
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"'{path}' is not an s3://bucket/key path")
    return parsed.netloc, parsed.path.lstrip("/")


def resolve(path: str, settings: S3Settings | None = None):
    """(pyarrow filesystem, path inside it) for an s3:// URI or a local path."""
    from pyarrow import fs

    if is_s3(path):
        bucket, key = split(path)
        return (settings or S3Settings.from_env()).filesystem(), f"{bucket}/{key}".rstrip("/")
    return fs.LocalFileSystem(), os.path.abspath(path)


def join(path: str, *parts: str) -> str:
    return "/".join([normalize(path), *[p.strip("/") for p in parts]])


def write_bytes(path: str, data: bytes, settings: S3Settings | None = None) -> None:
    """Write one object (one PUT on S3: atomic; a local file is renamed into place)."""
    filesystem, inner = resolve(path, settings)
    if is_s3(path):
        with filesystem.open_output_stream(inner, compression=None) as out:  # bytes as given, whatever the suffix
            out.write(data)
        return
    os.makedirs(os.path.dirname(inner), exist_ok=True)
    tmp = f"{inner}.tmp-{os.getpid()}"
    with open(tmp, "wb") as out:
        out.write(data)
    os.replace(tmp, inner)


def read_bytes(path: str, settings: S3Settings | None = None) -> bytes | None:
    """An object's bytes, or None when it does not exist."""
    from pyarrow import fs

    filesystem, inner = resolve(path, settings)
    if filesystem.get_file_info(inner).type != fs.FileType.File:
        return None
    with filesystem.open_input_stream(inner) as f:
        return f.read()


def write_json(path: str, value, settings: S3Settings | None = None) -> None:
    write_bytes(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode(), settings)


def read_json(path: str, settings: S3Settings | None = None):
    data = read_bytes(path, settings)
    return None if data is None else json.loads(data)


def list_files(path: str, settings: S3Settings | None = None, recursive: bool = False) -> list[str]:
    """The files under a folder or prefix, as full paths (s3://... or local), sorted by key."""
    from pyarrow import fs

    filesystem, inner = resolve(path, settings)
    info = filesystem.get_file_info(fs.FileSelector(inner, allow_not_found=True, recursive=recursive))
    prefix = "s3://" if is_s3(path) else ""
    return sorted(prefix + i.path for i in info if i.type == fs.FileType.File)
