"""Hours of the hourly enrichment output written without Spark, and receivers for the alerts.

An hour is written as the sink writes it: rows appended to a Delta table partitioned by `hour`
(deltalake, on S3 or a local folder), then the hour's completeness marker. A good hour has one row
per city of a 10-city snapshot, one of them silent (NULL measures); each breakage breaks it one way.
Shared by the quality gate's tests and the hourly report's tests.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import json
import socket
import threading
from decimal import Decimal

import pyarrow as pa
from streamjoin.io.storage import s3

HOUR = "2024-01-01T10"
START = dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC)
CITIES = 10
SCHEMA = pa.schema([
    ("sales_hour", pa.timestamp("us", tz="UTC")), ("city", pa.string()), ("region", pa.string()),
    ("store_name", pa.string()), ("total_sales", pa.decimal128(12, 2)), ("sales", pa.int64()), ("hour", pa.string()),
])
ALERT_VARIABLES = ("STREAMJOIN_SMTP_HOST", "STREAMJOIN_SMTP_PORT", "STREAMJOIN_SMTP_FROM", "STREAMJOIN_ALERT_EMAIL_TO",
                   "STREAMJOIN_SMTP_USER", "STREAMJOIN_SMTP_PASSWORD", "STREAMJOIN_SMTP_STARTTLS", "STREAMJOIN_ALERT_WEBHOOK_URL")


def good_rows(hour: str = HOUR) -> list[dict]:
    """One row per city of hour `hour`; city-0 sold nothing."""
    start = dt.datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=dt.UTC)
    return [{"sales_hour": start, "city": f"city-{i}", "region": f"region-{i % 3}", "store_name": f"Store {i}",
             "total_sales": None if i == 0 else Decimal(f"{i * 10}.50"), "sales": None if i == 0 else i, "hour": hour}
            for i in range(CITIES)]


def write_hour(output: str, rows: list[dict], snapshot_rows: int = CITIES, hour: str = HOUR,
               snapshot: dict | None = None) -> None:
    """Append the rows to the Delta table at `output`, then write the hour's completeness marker
    (`snapshot`: the marker's snapshot entry, e.g. `exported_snapshot(...)`'s)."""
    from deltalake import write_deltalake

    write_deltalake(output, pa.Table.from_pylist(rows, SCHEMA), mode="append", partition_by=["hour"],
                    storage_options=s3.S3Settings.from_env().storage_options())
    write_marker(output, hour, len(rows), snapshot_rows, snapshot)


def exported_snapshot(root: str, rows: list[dict] | None = None) -> dict:
    """Export the city table of `good_rows()` (or `rows`) as a snapshot version under `root`, as
    `streamjoin snapshot` does; return the marker's entry for it, as the sink writes it."""
    from streamjoin.io.sources import snapshots

    rows = rows if rows is not None else [{k: r[k] for k in ("city", "region", "store_name")} for r in good_rows()]
    meta = snapshots.export(pa.Table.from_pylist(rows), root, "files city_info")
    return {"alias": "ci", "source": f"s3 {snapshots.root_path(root)} version {meta['version']}",
            "taken_at": meta["taken_at"], "rows": meta["rows"], "sha256": meta["sha256"], "version": meta["version"]}


def write_marker(output: str, hour: str, rows: int, snapshot_rows: int = CITIES, snapshot: dict | None = None) -> None:
    s3.write_json(f"{output}/_complete/hour={hour}.json", {
        "hour": hour, "rows": rows, "table": output, "format": "delta", "table_version": 0,
        "snapshots": [snapshot or {"alias": "ci", "source": "files city_info", "taken_at": "2024-01-01T09:59:00.000",
                                   "rows": snapshot_rows, "sha256": "0" * 64}],
        "query": "query.sql", "clock": "2024-01-01T11:02:00", "completed_at": "2024-01-01T11:02:05+00:00",
    })


def fewer_rows_than_the_snapshot(rows):
    rows.pop()


def a_null_key(rows):
    rows[1]["city"] = None


def a_duplicate_key(rows):
    rows[2]["city"] = rows[1]["city"]


def a_row_of_another_hour(rows):
    rows[4]["sales_hour"] += dt.timedelta(hours=1)


def a_null_attribute(rows):
    rows[5]["region"] = None


def a_negative_measure(rows):
    rows[6]["total_sales"] = Decimal("-1.00")


def too_many_silent_cities(rows):
    for row in rows[:6]:  # 60% > max_null_measure_share 0.5
        row["total_sales"] = row["sales"] = None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SmtpInbox:
    """aiosmtpd handler: keeps every message received as (recipients, email.message.Message)."""

    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        import email

        self.messages.append((envelope.rcpt_tos, email.message_from_bytes(envelope.content)))
        return "250 OK"


@contextlib.contextmanager
def smtp_server():
    """A real SMTP server on 127.0.0.1 (aiosmtpd): yields (port, inbox)."""
    from aiosmtpd.controller import Controller

    inbox = SmtpInbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield controller.port, inbox
    finally:
        controller.stop()


@contextlib.contextmanager
def webhook_receiver(path: str = "/hooks/quality"):
    """An HTTP server on 127.0.0.1 that keeps every POST: yields (url, [(path, content type, JSON body)])."""
    received = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], json.loads(body)))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}", received
    finally:
        server.shutdown()
        server.server_close()
