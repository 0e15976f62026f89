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
