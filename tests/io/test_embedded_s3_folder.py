"""The embedded S3 server given a folder (`streamjoin s3 serve --data DIR`, what `make demo` and
`make airflow` use): what the apps wrote is still there after a restart, and is a file to open."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from streamjoin.io.storage import s3
from streamjoin.io.storage.embedded_s3 import EmbeddedS3

pytestmark = [pytest.mark.s3]  # embedded S3 servers of its own


def _options(server: EmbeddedS3) -> dict[str, str]:
    return server.env()


def test_objects_written_through_the_server_are_files_and_come_back_after_a_restart(tmp_path):
    store = tmp_path / "s3"
    with EmbeddedS3(port=0, data_dir=store) as server:
        client = server.settings.client()
        client.put_object(Bucket="streamjoin", Key="reports/app/hour=2024-01-01T02/index.html", Body=b"<h1>report</h1>",
                          ContentType="text/html; charset=utf-8")
        client.put_object(Bucket="streamjoin", Key="tmp/deleted.txt", Body=b"gone soon")
        client.delete_object(Bucket="streamjoin", Key="tmp/deleted.txt")
        client.put_object(Bucket="streamjoin", Key="tmp/batch-1.txt", Body=b"one")
        client.delete_objects(Bucket="streamjoin", Delete={"Objects": [{"Key": "tmp/batch-1.txt"}]})
        client.put_object(Bucket="streamjoin", Key="odd names/hour=2024-01-01T02/ü+a b.txt", Body=b"odd")
        client.put_object(Bucket="streamjoin", Key="notes.txt", Body=b"first")
        client.put_object(Bucket="streamjoin", Key="notes.txt", Body=b"second")
        write_deltalake("s3://streamjoin/out", pa.table({"a": [1, 2]}), storage_options=_options(server))
        write_deltalake("s3://streamjoin/out", pa.table({"a": [3]}), storage_options=_options(server), mode="append")
        written = sorted(o["Key"] for o in client.list_objects_v2(Bucket="streamjoin")["Contents"])

    bucket = store / "streamjoin"
    assert (bucket / "reports/app/hour=2024-01-01T02/index.html").read_bytes() == b"<h1>report</h1>"
    assert (bucket / "notes.txt").read_bytes() == b"second"
    assert (bucket / "odd names" / "hour=2024-01-01T02" / "ü+a b.txt").read_bytes() == b"odd"
    assert not (bucket / "tmp").exists()  # deleted objects and their emptied folders are gone
    assert sorted(p.relative_to(bucket).as_posix() for p in bucket.rglob("*") if p.is_file()) == written

    with EmbeddedS3(port=0, data_dir=store) as server:  # a new server process, a new port
        client = server.settings.client()
        assert sorted(o["Key"] for o in client.list_objects_v2(Bucket="streamjoin")["Contents"]) == written
        page = client.get_object(Bucket="streamjoin", Key="reports/app/hour=2024-01-01T02/index.html")
        assert page["ContentType"] == "text/html" and page["Body"].read() == b"<h1>report</h1>"
        table = DeltaTable("s3://streamjoin/out", storage_options=_options(server))
        assert sorted(table.to_pyarrow_table()["a"].to_pylist()) == [1, 2, 3] and table.version() == 1
        # and it keeps following changes after the load
        write_deltalake("s3://streamjoin/out", pa.table({"a": [4]}), storage_options=_options(server), mode="append")
    assert len(list((bucket / "out" / "_delta_log").glob("*.json"))) == 3


def test_a_second_server_on_the_same_folder_refuses_to_start_and_names_the_first(tmp_path):
    with EmbeddedS3(port=0, data_dir=tmp_path / "s3"):
        with pytest.raises(RuntimeError, match=r"in use by another embedded S3 server \(pid \d+\)"):
            EmbeddedS3(port=0, data_dir=tmp_path / "s3").start()
    with EmbeddedS3(port=0, data_dir=tmp_path / "s3"):  # free again once the first one stopped
        pass


def test_a_write_cut_off_by_a_crash_leaves_the_previous_version_of_the_object(tmp_path):
    bucket = tmp_path / "s3" / "streamjoin"
    (bucket / "out").mkdir(parents=True)
    (bucket / "out" / "state.json").write_bytes(b'{"v": 1}')
    (bucket / "out" / "state.json.s3-partial").write_bytes(b'{"v": 2, "tru')  # the rename never happened
    with EmbeddedS3(port=0, data_dir=tmp_path / "s3") as server:
        client = server.settings.client()
        assert [o["Key"] for o in client.list_objects_v2(Bucket="streamjoin")["Contents"]] == ["out/state.json"]
        assert client.get_object(Bucket="streamjoin", Key="out/state.json")["Body"].read() == b'{"v": 1}'
    assert not (bucket / "out" / "state.json.s3-partial").exists()


def test_a_socket_connected_to_itself_is_not_taken_for_a_listening_server():
    """TCP's simultaneous open: a connect whose source port is its destination meets itself. The
    readiness poll of a starting server did once, then every request was refused."""
    import socket

    from streamjoin.io.storage.ports import connected_to_itself, free_port, listening

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.connect(s.getsockname())  # nobody listens there: it meets itself
        assert connected_to_itself(s)
    assert not listening("127.0.0.1", free_port())
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client.connect(server.getsockname())
        assert not connected_to_itself(client) and listening(*server.getsockname())


def test_without_a_folder_the_server_keeps_nothing_on_disk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with EmbeddedS3(port=0) as server:
        server.settings.client().put_object(Bucket="streamjoin", Key="a.txt", Body=b"x")
    assert list(tmp_path.iterdir()) == []


def test_streamjoin_report_copies_an_hours_report_and_data_docs_from_s3_and_prints_the_files_to_open(
        s3_server, s3_prefix, tmp_path, monkeypatch):
    hour = "2024-01-01T02"
    report = f"{s3_prefix}/reports/hourly_city_sales/hour={hour}"
    s3.write_bytes(f"{report}/index.html", b"<h1>the report</h1>")
    s3.write_bytes(f"{report}/cities.csv", b"city\n")
    s3.write_bytes(f"{s3_prefix}/output/_quality/hour={hour}/docs/index.html", b"<h1>docs</h1>")
    s3.write_bytes(f"{s3_prefix}/output/_quality/hour={hour}/docs/validations/x/page.html", b"<p>page")
    env = {**os.environ, "REPORTS_PATH": f"{s3_prefix}/reports", "OUTPUT_PATH": f"{s3_prefix}/output"}

    def report_command(*args):
        return subprocess.run([sys.executable, "-m", "streamjoin.cli", "report", "hourly_city_sales", *args],
                              capture_output=True, text=True, env=env, timeout=120)

    done = report_command("--hour", hour, "--to", str(tmp_path / "copies"))
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "copies" / "hourly_city_sales" / f"hour={hour}"
    assert done.stdout.splitlines() == [
        f"report:    {copy / 'index.html'}  (copied from {report}/)",
        f"data docs: {copy / 'data-docs' / 'index.html'}",
    ]
    assert (copy / "index.html").read_bytes() == b"<h1>the report</h1>" and (copy / "cities.csv").read_bytes() == b"city\n"
    assert (copy / "data-docs" / "validations" / "x" / "page.html").read_bytes() == b"<p>page"

    missing = report_command("--hour", "2024-01-01T03", "--to", str(tmp_path / "copies"))
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip().splitlines()[-1] == (
        f"streamjoin: no report for hour 2024-01-01T03 of hourly_city_sales at {s3_prefix}/reports/hourly_city_sales/"
        "hour=2024-01-01T03/index.html: trigger hourly_enrichment_report for that hour (it checks the hour and publishes it)")
