"""The embedded S3-compatible server: moto's server mode on localhost, with the apps' buckets.

`streamjoin s3 serve` runs it in the foreground (until Ctrl-C or SIGTERM) and prints the
variables that point every client at it; `make demo` and the tests start it in-process. It keeps
objects in memory, so they live as long as the server does, unless it is given a folder
(`--data DIR`, `EmbeddedS3(data_dir=...)`): then every object is also a file under that folder and
the next start loads them again (io/storage/s3_folder.py). `make demo` and `make airflow` both use `data/s3`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from moto.server import ThreadedMotoServer

from streamjoin.io.storage.ports import free_port, listening
from streamjoin.io.storage.s3 import S3Settings
from streamjoin.io.storage.s3_folder import FolderMirror

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9000
DEFAULT_BUCKETS = ("streamjoin",)
# moto accepts any credentials; these, what env() hands to clients, match docker-compose.yml's
# MinIO defaults, so one set of variables works against both. They guard nothing (a local test
# server); STREAMJOIN_S3_ACCESS_KEY / STREAMJOIN_S3_SECRET_KEY choose others.
ACCESS_KEY, SECRET_KEY, REGION = "streamjoin", "streamjoin-secret", "us-east-1"


class EmbeddedS3:
    """Start with `start()` (returns the settings clients use), stop with `stop()`.

    By default the server runs in a process of its own (`streamjoin s3 serve`): deltalake's
    native calls can hold the GIL while they wait on the network, which would starve a server
    thread in the same process. `in_process=True` runs it as a thread (pure-Python clients only).
    """

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, buckets=DEFAULT_BUCKETS,
                 in_process: bool = False, data_dir: str | os.PathLike | None = None):
        self.host, self.port, self.buckets = host, port or free_port(host), tuple(buckets)
        self.in_process = in_process
        self.data_dir = Path(data_dir).resolve() if data_dir else None
        self.access_key = os.environ.get("STREAMJOIN_S3_ACCESS_KEY") or ACCESS_KEY
        self.secret_key = os.environ.get("STREAMJOIN_S3_SECRET_KEY") or SECRET_KEY
        self.loaded = 0  # objects loaded from data_dir (in-process servers)
        self._server = None
        self._process = None

    @property
    def settings(self) -> S3Settings:
        return S3Settings(f"http://{self.host}:{self.port}", self.access_key, self.secret_key, REGION)

    def env(self) -> dict[str, str]:
        """The standard variables that point S3 clients (boto3, pyarrow, deltalake) here."""
        return {
            "AWS_ENDPOINT_URL": self.settings.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def start(self) -> S3Settings:
        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
        if listening(self.host, self.port):
            raise RuntimeError(f"port {self.port} on {self.host} is in use: pick another with --port")
        if self.in_process:
            mirror = FolderMirror(self.data_dir, region=REGION) if self.data_dir else None
            self.loaded = mirror.load() if mirror else 0  # before it listens: no client sees a half-loaded store
            self._server = _MirroredMotoServer(mirror, ip_address=self.host, port=self.port, verbose=False)
            try:
                self._server.start()
            except BaseException:
                if mirror:
                    mirror.close()
                raise
        else:
            import subprocess
            import sys
            import tempfile

            self._log = tempfile.TemporaryFile()
            self._process = subprocess.Popen(
                [sys.executable, "-m", "streamjoin.cli", "s3", "serve", "--host", self.host, "--port", str(self.port),
                 *[a for b in self.buckets for a in ("--bucket", b)],
                 *(["--data", str(self.data_dir)] if self.data_dir else [])],
                # stderr to a file, not a pipe nobody drains (a full pipe would block the server)
                stdout=subprocess.DEVNULL, stderr=self._log,
            )
        deadline = time.time() + 60
        while not listening(self.host, self.port):
            if self._process is not None and self._process.poll() is not None:
                self._log.seek(0)
                raise RuntimeError(f"the embedded S3 server exited: {self._log.read().decode(errors='replace')[-500:]}")
            if time.time() > deadline:
                raise RuntimeError(f"the embedded S3 server did not start on {self.host}:{self.port}")
            time.sleep(0.05)
        client = self.settings.client()
        existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
        for bucket in self.buckets:
            if bucket not in existing:
                client.create_bucket(Bucket=bucket)
        return self.settings

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._process is not None:
            import signal

            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(timeout=10)
            except Exception:  # noqa: BLE001 - it must go either way
                self._process.kill()
            self._process = None

    def __enter__(self) -> EmbeddedS3:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class _MirroredMotoServer(ThreadedMotoServer):
    """moto's threaded server, its app wrapped so that a folder follows every change (or as is)."""

    def __init__(self, mirror: FolderMirror | None, **kwargs):
        super().__init__(**kwargs)
        self._mirror = mirror

    def _server_entry(self) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(self._ip_address, self._port, self._mirror.wsgi(app) if self._mirror else app,
                                   True, request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()

    def stop(self) -> None:
        super().stop()
        if self._mirror is not None:
            self._mirror.close()


def serve(host: str, port: int, buckets: list[str], out, data_dir: str | None = None) -> None:
    """Run until SIGINT/SIGTERM, printing the variables to export."""
    import signal
    import threading

    server = EmbeddedS3(host, port, buckets or DEFAULT_BUCKETS, in_process=True, data_dir=data_dir)
    server.start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"embedded S3 on {server.settings.endpoint_url}, buckets: {', '.join(server.buckets)}", file=out)
    print("point clients at it with:", file=out)
    for name, value in server.env().items():
        print(f"export {name}={value}", file=out)
    if server.data_dir:
        print(f"objects are kept in {server.data_dir} ({server.loaded} loaded from it); stop with Ctrl-C",
              file=out, flush=True)
    else:
        print("stop with Ctrl-C (objects are kept in memory only: --data DIR keeps them in a folder)", file=out, flush=True)
    try:
        while not stop.is_set():
            stop.wait(0.5)
    finally:
        server.stop()
