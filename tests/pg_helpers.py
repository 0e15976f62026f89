"""The local PostgreSQL server the tests use (trust auth; `STREAMJOIN_TEST_PG_URL` overrides)."""

from __future__ import annotations

import os

PG_URL = os.environ.get("STREAMJOIN_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def pg_execute(sql: str) -> None:
    """Run statements in autocommit mode."""
    import psycopg2
    from streamjoin.io import postgres

    conn = psycopg2.connect(**postgres.parse_url(PG_URL))
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()
