"""The local PostgreSQL server the tests use (trust auth; `STREAMJOIN_TEST_PG_URL` overrides)."""

from __future__ import annotations

import os

PG_URL = os.environ.get("STREAMJOIN_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def pg_execute(sql: str, fetch: bool = False) -> list[tuple] | None:
    """Run statements in autocommit mode; `fetch`: return the last one's rows."""
    import psycopg2
    from streamjoin.io import postgres

    conn = psycopg2.connect(**postgres.parse_url(PG_URL))
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall() if fetch else None
    finally:
        conn.close()


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
