"""`make airflow`: Airflow standalone on this repo's DAGs, with the embedded S3 and local Spark.

Starts `streamjoin s3 serve --data data/s3` (objects kept as files under data/s3/, the folder
`make demo` fills, so they survive restarts), the embedded Kafka broker (`streamjoin kafka serve`
on --kafka-port, topics in memory; skipped, saying so, when the port is taken) and `airflow standalone` (AIRFLOW_HOME=.airflow, SQLite, this repo's
dags/), configures the connections from environment variables (`AIRFLOW_CONN_AWS_DEFAULT` to the
embedded S3, `AIRFLOW_CONN_SPARK_DEFAULT` to local[2]), prints the URL, the login and the S3
endpoint with its credentials, and stops both cleanly on Ctrl-C (standalone shuts down cleanly
only on SIGINT). The API server listens on 127.0.0.1 only, unless `AIRFLOW__API__HOST` says
otherwise (`AIRFLOW__API__HOST=0.0.0.0 make airflow` for every interface).

    .venv/bin/python include/airflow_local.py [--port 8080] [--s3-port 9000] [--kafka-port 9092] [--home .airflow] [--data data/s3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "data" / "s3"  # the embedded S3's objects, one file each: <bucket>/<key>
BIN = Path(sys.executable).parent
# How long SQLite's writers wait for each other (s) before "database is locked". The UI's Trigger on
# a paused DAG sends the unpause and the new run at once; beside a running app's tasks the default
# 5 s was not always enough (the unpause failed with a 500, "Database error", 2026-12-07). Airflow
# imports it by name (AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS) when its database is SQLite.
SQLITE_CONNECT_ARGS = {"timeout": 30}


def airflow_env(home: Path, s3_env: dict[str, str], api_port: int) -> dict[str, str]:
    """The environment the DAGs need: this repo's dags, the embedded S3, local Spark."""
    endpoint = s3_env["AWS_ENDPOINT_URL"]
    return {
        **os.environ,
        **s3_env,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # airflow, spark-submit
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__API__HOST": api_host(),
        "AIRFLOW__API__PORT": str(api_port),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{api_port}",
        "STREAMJOIN_HOME": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "AIRFLOW_CONN_AWS_DEFAULT": json.dumps({
            "conn_type": "aws", "login": s3_env["AWS_ACCESS_KEY_ID"], "password": s3_env["AWS_SECRET_ACCESS_KEY"],
            "extra": {"endpoint_url": endpoint, "region_name": s3_env["AWS_REGION"]},
        }),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        **sqlite_env(),
        # the apps' data: outputs and snapshots on the embedded S3, inputs in local folders
        **data_env(),
    }


def sqlite_env() -> dict[str, str]:
    """SQLite's longer lock wait (SQLITE_CONNECT_ARGS), unless Airflow is given another database."""
    if not os.environ.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "sqlite").startswith("sqlite"):
        return {}
    return {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": "include.airflow_local.SQLITE_CONNECT_ARGS"}


def data_env() -> dict[str, str]:
    """Where the apps' data is (the DAGs' environment, and the banner's exports, so that
    `streamjoin report` / `quality check` in another shell find the same storage)."""
    return {
        "OUTPUT_PATH": os.environ.get("OUTPUT_PATH", "s3://streamjoin/apps/hourly_city_sales/output"),
        "CITY_INFO_SNAPSHOTS_PATH": os.environ.get("CITY_INFO_SNAPSHOTS_PATH", "s3://streamjoin/snapshots/city_info"),
        "REPORTS_PATH": os.environ.get("REPORTS_PATH", "s3://streamjoin/reports"),
    }


def api_host() -> str:
    """Where the API server listens: this machine only (a laptop tool), unless asked otherwise."""
    return os.environ.get("AIRFLOW__API__HOST") or "127.0.0.1"


def banner(url: str, password: str, s3_env: dict[str, str], store: Path = STORE, kafka: str | None = None) -> list[str]:
    """What `make airflow` prints once Airflow is up: the UI and its login, the DAGs, and how to
    reach the embedded S3 (endpoint and credentials, as exports for another shell)."""
    host = api_host()
    reports = os.environ.get("REPORTS_PATH", "s3://streamjoin/reports")
    where = ("this machine only (AIRFLOW__API__HOST=0.0.0.0 make airflow to listen on every interface)"
             if host in ("127.0.0.1", "localhost", "::1") else host)
    return [
        f"Airflow is up: {url}  (login admin / {password}); listening on {where}",
        "DAGs: streaming_join_apps, lookup_snapshot_refresh, hourly_enrichment_report",
        f"embedded S3: {s3_env['AWS_ENDPOINT_URL']}, bucket s3://streamjoin/ "
        f"(access key {s3_env['AWS_ACCESS_KEY_ID']}, secret key {s3_env['AWS_SECRET_ACCESS_KEY']}), its objects kept as "
        f"files under {shown(store)}/ (reports: {shown(_local(store, reports))}/); from another shell:",
        *(f"  export {name}={value}" for name, value in {**s3_env, **data_env()}.items()),
        *([f"  export STREAMJOIN_KAFKA_BOOTSTRAP={kafka}   # the embedded Kafka broker (topics in memory)"] if kafka else []),
        "  (then: .venv/bin/streamjoin report hourly_city_sales --hour H --open)",
    ]


def start_kafka(port: int):
    """The embedded Kafka broker on `port` (None when 0, or when the port is taken: said on stdout)."""
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka

    if not port:
        return None
    broker = EmbeddedKafka(port=port)
    try:
        broker.start()
    except RuntimeError as error:
        print(f"not starting the embedded Kafka broker: {error}", flush=True)
        return None
    return broker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--s3-port", type=int, default=9000)
    parser.add_argument("--kafka-port", type=int, default=9092, help="the embedded Kafka broker's (0: do not start one)")
    parser.add_argument("--home", type=Path, default=ROOT / ".airflow", help="AIRFLOW_HOME (default: .airflow)")
    parser.add_argument("--data", type=Path, default=STORE, help="the embedded S3's folder (default: data/s3, the demo's)")
    args = parser.parse_args()
    from streamjoin.io.storage.embedded_s3 import EmbeddedS3

    home = args.home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    s3 = EmbeddedS3(port=args.s3_port, data_dir=args.data.resolve())
    s3.start()
    kafka = start_kafka(args.kafka_port)
    env = airflow_env(home, s3.env(), args.port)
    if kafka is not None:
        env["STREAMJOIN_KAFKA_BOOTSTRAP"] = kafka.servers
    stop = {"asked": False}

    def ask_stop(*_):
        stop["asked"] = True

    # handled before standalone starts: a program started with SIGINT ignored (in the background of
    # a script, under nohup) would pass "ignored" on to standalone, which then never shuts down
    signal.signal(signal.SIGINT, ask_stop)
    signal.signal(signal.SIGTERM, ask_stop)
    # its own session: Ctrl-C reaches this launcher only, which sends standalone exactly one SIGINT
    # (a second one, while it shuts down, leaves it hanging)
    standalone = subprocess.Popen([str(BIN / "airflow"), "standalone"], env=env, cwd=ROOT, start_new_session=True,
                                  stdout=open(home / "standalone.log", "ab"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{args.port}"
    print(f"starting Airflow standalone (log: {home / 'standalone.log'}) and the embedded S3 on "
          f"{s3.settings.endpoint_url} ...", flush=True)
    try:
        while not stop["asked"] and standalone.poll() is None and not _up(f"{url}/api/v2/monitor/health"):
            time.sleep(1)
        if standalone.poll() is None and not stop["asked"]:
            print("\n".join(banner(url, _password(home), s3.env(), args.data.resolve(),
                                   kafka.servers if kafka else None)), flush=True)
            print("stop with Ctrl-C", flush=True)
        while not stop["asked"] and standalone.poll() is None:
            time.sleep(0.5)
    finally:
        if standalone.poll() is None:
            standalone.send_signal(signal.SIGINT)  # the only signal standalone shuts down cleanly on
            try:
                standalone.wait(timeout=60)
            except subprocess.TimeoutExpired:
                standalone.kill()
        s3.stop()
        if kafka is not None:
            kafka.stop()
        print("stopped Airflow, the embedded S3 and the embedded Kafka broker" if kafka else
              "stopped Airflow and the embedded S3", flush=True)
    return 0


def shown(path: Path | str) -> str:
    """A path as the user should read it: relative to the repository when inside it."""
    return str(path.relative_to(ROOT)) if isinstance(path, Path) and path.is_relative_to(ROOT) else str(path)


def _local(store: Path, path: str) -> Path | str:
    """Where the embedded S3 keeps `s3://bucket/key` (store/bucket/key); other paths as they are."""
    return store / path.removeprefix("s3://").strip("/") if path.startswith("s3://") else path


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _password(home: Path) -> str:
    path = home / "simple_auth_manager_passwords.json.generated"
    for _ in range(30):
        if path.exists():
            return json.loads(path.read_text()).get("admin", "?")
        time.sleep(1)
    return f"(see {path})"


if __name__ == "__main__":
    sys.exit(main())
