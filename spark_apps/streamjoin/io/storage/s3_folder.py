"""A local folder that keeps the embedded S3 server's objects across restarts.

moto keeps objects in memory. `FolderMirror` writes every object through to
`<root>/<bucket>/<key>` after each request that changed it (write to a temporary name, then
rename: a crash leaves the last complete version), removes the file when the object is deleted,
and loads the folder back into the server when it starts. The folder is also the easiest way to
look at what the apps wrote: a report is `<root>/streamjoin/reports/<app>/hour=H/index.html`.

Kept: buckets, keys and bytes; the Content-Type is guessed from the name on load. Not kept:
other metadata, versions, tags, ACLs, unfinished multipart uploads, Kinesis streams. Keys that
cannot be a file (ending in `/`, an empty, `.` or `..` segment, a name that is both a folder and
a file) live in memory only, with a warning on stderr.
"""

from __future__ import annotations

import mimetypes
import os
import sys
import threading
from pathlib import Path

TEMP_SUFFIX = ".s3-partial"
MUTATING = frozenset({"PUT", "POST", "DELETE"})


class FolderMirror:
    """Call `load()` once the server runs in this process, then wrap its WSGI app with `wsgi(app)`."""

    def __init__(self, root: str | os.PathLike, account_id: str | None = None, region: str = "us-east-1"):
        from moto.core import DEFAULT_ACCOUNT_ID

        self.root = Path(root)
        self.account_id, self.region = account_id or DEFAULT_ACCOUNT_ID, region
        self._written: dict[tuple[str, str], tuple[str, int]] = {}  # (bucket, key) -> (etag, size) on disk
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.RLock()  # one change at a time: a request that changes objects, then the sync

    def _backend(self):
        from moto.s3.models import s3_backends
        from moto.utilities.utils import get_partition

        return s3_backends[self.account_id][get_partition(self.region)]

    def load(self) -> int:
        """Create the folder's buckets and objects in the server; return how many objects."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._hold_folder()
        backend, loaded = self._backend(), 0
        with self._lock:
            for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
                if folder.name not in backend.buckets:
                    backend.create_bucket(folder.name, self.region)
                for path in sorted(folder.rglob("*")):
                    if not path.is_file():
                        continue
                    if path.name.endswith(TEMP_SUFFIX):  # a write cut off by a crash: the object is the old file
                        path.unlink(missing_ok=True)
                        continue
                    key = path.relative_to(folder).as_posix()
                    obj = backend.put_object(folder.name, key, path.read_bytes(), disable_notification=True)
                    obj.set_metadata({"content-type": mimetypes.guess_type(key)[0] or "binary/octet-stream"})
                    self._written[(folder.name, key)] = (obj.etag, obj.size)
                    loaded += 1
        return loaded

    def _hold_folder(self) -> None:
        """One server per folder: a second one would overwrite the first one's files."""
        import fcntl

        self._lock_file = open(self.root / ".lock", "a+")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.seek(0)
            holder = self._lock_file.read().strip() or "?"
            self._lock_file.close()
            raise RuntimeError(f"{self.root} is in use by another embedded S3 server (pid {holder}): stop it first, "
                               "or give this one another folder") from None
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(str(os.getpid()))
        self._lock_file.flush()

    def close(self) -> None:
        """Let another server use the folder."""
        lock = getattr(self, "_lock_file", None)
        if lock is not None and not lock.closed:
            lock.close()

    def sync(self) -> None:
        """Bring the folder in line with the server: write new and changed objects, remove deleted ones."""
        backend = self._backend()
        with self._lock:
            present: set[tuple[str, str]] = set()
            for bucket_name, bucket in list(backend.buckets.items()):
                (self.root / bucket_name).mkdir(parents=True, exist_ok=True)
                for key, obj in bucket.keys.items():
                    if getattr(obj, "is_delete_marker", False) or not hasattr(obj, "etag"):
                        continue
                    present.add((bucket_name, key))
                    signature = (obj.etag, obj.size)
                    if self._written.get((bucket_name, key)) != signature and self._write(bucket_name, key, obj.value):
                        self._written[(bucket_name, key)] = signature
            for bucket_name, key in [k for k in self._written if k not in present]:
                self._remove(bucket_name, key)
                del self._written[(bucket_name, key)]

    def wsgi(self, app):
        """`app`, syncing the folder after every request that may have changed an object."""

        def mirrored(request, start_response):  # `request`: the WSGI environ of one request
            # Kinesis (and every JSON-protocol service) says X-Amz-Target; S3 never does
            if request.get("REQUEST_METHOD") not in MUTATING or "HTTP_X_AMZ_TARGET" in request:
                return app(request, start_response)
            with self._lock:  # no other change between this request and its sync
                response = app(request, start_response)
                try:
                    self._after(request)
                except Exception as error:  # noqa: BLE001 - the request succeeded; say loudly that the copy did not
                    print(f"embedded S3: could not write objects to {self.root}: {error}", file=sys.stderr, flush=True)
            return response

        return mirrored

    def _after(self, request) -> None:
        """Sync what a request may have changed: its one object when the path names it (path-style
        URLs: /bucket/key), everything otherwise or when that object is not where the path says."""
        query = request.get("QUERY_STRING", "")
        if request["REQUEST_METHOD"] == "PUT" and "partNumber=" in query:
            return  # one part of a multipart upload: no object changes before it completes
        path = request.get("PATH_INFO", "").encode("latin-1").decode("utf-8", errors="replace")
        bucket, _, key = path.lstrip("/").partition("/")
        if not key or "delete" in query.split("&") or not self._sync_key(bucket, key):
            self.sync()

    def _sync_key(self, bucket_name: str, key: str) -> bool:
        """Write or remove one object's file; False when the server does not know it (sync all instead)."""
        bucket = self._backend().buckets.get(bucket_name)
        obj = bucket.keys.get(key) if bucket is not None else None
        if obj is not None and not getattr(obj, "is_delete_marker", False) and hasattr(obj, "etag"):
            signature = (obj.etag, obj.size)
            if self._written.get((bucket_name, key)) != signature and self._write(bucket_name, key, obj.value):
                self._written[(bucket_name, key)] = signature
            return True
        if (bucket_name, key) in self._written:  # deleted
            self._remove(bucket_name, key)
            del self._written[(bucket_name, key)]
            return True
        return False

    def _path(self, bucket: str, key: str) -> Path | None:
        parts = key.split("/")
        if any(p in ("", ".", "..") for p in parts) or parts[-1].endswith(TEMP_SUFFIX):
            return None
        return self.root.joinpath(bucket, *parts)

    def _write(self, bucket: str, key: str, data: bytes) -> bool:
        path = self._path(bucket, key)
        try:
            if path is None or path.is_dir():
                raise ValueError("the key cannot be a file name there")
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + TEMP_SUFFIX)
            partial.write_bytes(data)
            os.replace(partial, path)
            return True
        except (OSError, ValueError) as error:
            if (bucket, key) not in self._warned:
                self._warned.add((bucket, key))
                print(f"embedded S3: s3://{bucket}/{key} is kept in memory only ({error})", file=sys.stderr, flush=True)
            return False

    def _remove(self, bucket: str, key: str) -> None:
        path = self._path(bucket, key)
        if path is None:
            return
        path.unlink(missing_ok=True)
        top = self.root / bucket
        folder = path.parent
        while folder != top and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
