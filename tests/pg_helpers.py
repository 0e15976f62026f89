"""The local PostgreSQL server the tests use (trust auth; `STREAMJOIN_TEST_PG_URL` overrides)."""

from __future__ import annotations

import os

PG_URL = os.environ.get("STREAMJOIN_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def pg_execute(sql: str, fetch: bool = False) -> list[tuple] | None:
    """Run statements in autocommit mode; `fetch`: return the last one's rows."""
    from streamjoin.io.sources import postgres

    return execute_on(postgres.parse_url(PG_URL), sql, fetch)


def execute_on(connection: dict, sql: str, fetch: bool = False) -> list[tuple] | None:
    """`sql` on the server `connection` names (psycopg2.connect's arguments), in autocommit mode."""
    import psycopg2

    conn = psycopg2.connect(**connection)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall() if fetch else None
    finally:
        conn.close()


# Programs whose `check` reads a database's catalog (`-- database:` in the header; an s-Server
# JDBC foreign table declared without columns): the database, its role and its table, as the
# program's server declares them, on the local PostgreSQL server.
DATABASES = {
    "pctcheck": ("checker", "checkerpw", "CREATE TABLE IF NOT EXISTS expected_percentiles (route varchar(10), "
                 "rt timestamp, pg_count bigint, pg_pctd_25 double precision, pg_pctd_50 double precision, "
                 "pg_pctd_75 double precision, pg_pctc_25 double precision, pg_pctc_50 double precision, "
                 "pg_pctc_75 double precision, velocity_array double precision[])"),
}


def ensure_database(name: str) -> None:
    """The database a program's check reads, created once on the local server (trust auth)."""
    import psycopg2

    role, password, ddl = DATABASES[name]
    admin = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres")
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
        if not cur.fetchone():
            cur.execute(f"CREATE ROLE {role} LOGIN PASSWORD %s", (password,))
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if not cur.fetchone():
            cur.execute(f"CREATE DATABASE {name} OWNER {role}")
    admin.close()
    with psycopg2.connect(host="127.0.0.1", port=5432, user=role, password=password, dbname=name) as conn, conn.cursor() as cur:
        cur.execute(ddl)


class PgProxy:
    """A TCP forwarder on a fixed local port in front of the test server: `down()` closes the port
    and every connection through it (PostgreSQL "goes away"), `up()` serves the same port again.
    `url` is PG_URL pointed at the proxy."""

    def __init__(self):
        import socket
        from urllib.parse import urlsplit

        target = urlsplit(PG_URL)
        self.target = (target.hostname or "127.0.0.1", target.port or 5432)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.url = PG_URL.replace(f"{target.hostname}:{target.port or 5432}", f"127.0.0.1:{self.port}", 1)
        self._listener, self._sockets = None, []

    def up(self) -> None:
        import socket
        import threading

        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        import contextlib

        listener, self._listener = self._listener, None
        for s in [listener, *self._sockets]:
            with contextlib.suppress(OSError):
                s.close()
        self._sockets = []

    def _accept(self, listener) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(2)
                except OSError:
                    pass


class LogicalPostgres:
    """A PostgreSQL cluster of the tests' own with `wal_level = logical` (change data capture,
    io.sources.pg_cdc): the machine's own server is never reconfigured. `initdb` refuses root, so as
    root the cluster is made and run as the `postgres` user. `url()` names a database of it."""

    def __init__(self, root):
        from pathlib import Path

        from streamjoin.io.storage.ports import free_port

        self.root = Path(root)
        self.data = self.root / "data"
        self.port = free_port()
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
        if not bins:
            raise RuntimeError("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt install postgresql)")
        self.bin = bins[-1].parent

    def _as_owner(self, *args: str) -> None:
        import subprocess

        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> LogicalPostgres:
        import shutil

        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        self._as_owner(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c wal_level=logical -c fsync=off "
                   "-c max_replication_slots=40 -c max_wal_senders=40")
        self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "start")
        return self

    def stop(self) -> None:
        import contextlib
        import subprocess

        with contextlib.suppress(subprocess.CalledProcessError):
            self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def execute(self, sql: str, db: str = "postgres", fetch: bool = False) -> list[tuple] | None:
        return execute_on({"host": "127.0.0.1", "port": self.port, "user": "postgres", "dbname": db}, sql, fetch)
