"""`make demo`: the whole pipeline, without the UI, on this machine.

1. starts the embedded S3 server, its objects kept as files under data/s3/ (a fresh bucket);
2. generates a city table and five hours of sales (include/apps/hourly_city_sales/generate.py)
   into the app's own folders (data/hourly_city_sales/, emptied first);
3. runs the enrichment app with spark-submit (`spark_apps/run_app.py`), as Airflow deploys it,
   and feeds it the sales hour by hour, as a producer would;
4. after two hours, refreshes the city snapshot (a store is renamed): a new snapshot version,
   a graceful restart, the app's status names the new version;
5. closes the last hour with a rowtime bound and stops the app gracefully;
6. runs `airflow dags test hourly_enrichment_report` for every produced hour (quality check and
   report into S3);
7. prints what happened and where to look.

Everything stays where `make airflow` looks: the same S3 folder, the app's inputs and checkpoint.

    .venv/bin/python include/demo.py [--data DIR]   (default: data/, where `make airflow` looks)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "include" / "apps" / "hourly_city_sales"))  # its generate.py
PREFIX = "s3://streamjoin"
OUTPUT = f"{PREFIX}/apps/hourly_city_sales/output"


def say(text: str) -> None:
    print(text, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data",
                        help="the demo's folder: S3 objects, the app's folders, scratch (default: data/)")
    top = parser.parse_args(argv).data.resolve()
    from app import _by_hour
    from generate import generate
    from streamjoin.io.sinks.hours import complete_hours, marker
    from streamjoin.io.storage import s3
    from streamjoin.io.storage.embedded_s3 import EmbeddedS3
    from streamjoin.quality import read_verdict
    from streamjoin.runtime.app import App, Control

    from include.airflow_local import airflow_env, shown
    from include.ops.refresh import refresh, status
    from include.ops.supervise import SubprocessLaunch

    started = time.time()
    work = top / "demo"  # the demo's scratch: generated files, its Airflow home, logs
    data = top / "hourly_city_sales"  # the app's own folders ([paths] of its app.toml)
    store = top / "s3"  # the embedded S3's objects, kept for `make airflow`
    # a fresh start: the app's own folders (inputs, checkpoint) and the bucket, where `make airflow` finds them
    for folder in (work, data, store / "streamjoin"):
        shutil.rmtree(folder, ignore_errors=True)
    server = EmbeddedS3(port=0, data_dir=store)
    settings = server.start()
    env = {
        **server.env(),
        "SALES_PATH": str(data / "sales"), "CITY_INFO_PATH": str(data / "city_info"),
        "CHECKPOINT_PATH": str(data / "checkpoint"), "OUTPUT_PATH": OUTPUT,
        "CITY_INFO_SNAPSHOTS_PATH": f"{PREFIX}/snapshots/city_info", "REPORTS_PATH": f"{PREFIX}/reports",
    }
    os.environ.update(env)
    app = App.load(ROOT / "include" / "apps" / "hourly_city_sales")
    process = None
    try:
        say(f"1. embedded S3 on {settings.endpoint_url}: bucket streamjoin, objects kept in {shown(store)}/")
        g = generate(work / "incoming", write_late=True)
        data.mkdir(parents=True)
        shutil.move(work / "incoming" / "city_info", data / "city_info")
        (data / "sales").mkdir()
        hours = _by_hour(g.files)
        say(f"2. generated {len(g.cities)} cities and {len(g.sales)} sales over {len(g.silent)} hours "
            f"(+{len(g.late)} late) into {shown(data / 'sales')}, hour by hour")
        process = SubprocessLaunch(app, 3600)
        say(f"3. started the app with spark-submit (log {app.checkpoint / 'app.log'}); feeding sales an hour at a time")
        for i, files in enumerate(hours):
            for f in files:
                shutil.copy(f, data / "sales" / f".{f.name}")
                os.replace(data / "sales" / f".{f.name}", data / "sales" / f.name)
            if "late" not in files[0].name:
                _wait(lambda i=i: len(complete_hours(OUTPUT, settings)) >= i, process, f"hour {i} to close")
            for hour in complete_hours(OUTPUT, settings)[len(_shown):]:
                mark = marker(OUTPUT, hour, settings)
                say(f"   hour {hour} complete: {mark['rows']} rows, city snapshot version {mark['snapshots'][0].get('version')}")
                _shown.append(hour)
            if i == 2:
                _rename_a_store(data / "city_info")
                done = refresh(app, timeout_s=300)
                say(f"4. snapshot refresh: city_info version {done['snapshots'][0]['version']} exported; "
                    f"{done['outcome']} after {done.get('waited_s', 0)} s (status: "
                    f"{', '.join(s['source'] for s in status(app)['snapshots'])})")
        import datetime as dt

        latest = dt.datetime.fromisoformat(max(s["sale_time"] for s in g.sales).replace(" ", "T")[:19])
        bound = (latest.replace(minute=0, second=0) + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
        (data / "sales" / "zz-bound.json").write_text(json.dumps({"sale_time": bound, "_bound": True}) + "\n")
        _wait(lambda: len(complete_hours(OUTPUT, settings)) >= len(g.silent), process, "the last hour to close")
        for hour in complete_hours(OUTPUT, settings)[len(_shown):]:
            say(f"   hour {hour} complete: {marker(OUTPUT, hour, settings)['rows']} rows (closed by a rowtime bound at {bound})")
        Control(app.checkpoint).request("stop", "demo done")
        _wait(lambda: process.poll() is not None, process, "the graceful stop", allow_exit=True)
        final = status(app)
        say(f"5. the app stopped gracefully (exit {process.poll()}): {final['rows_emitted']} rows emitted, "
            f"{final['late_rows']} late rows (in {app.checkpoint / 'late'})")
        say("6. airflow dags test hourly_enrichment_report, one run per hour (quality check + report):")
        verdicts = _reports(env, complete_hours(OUTPUT, settings), airflow_env, server, work / "airflow")
        say("7. where to look:")
        bucket = store / "streamjoin"
        for hour, (state, seconds) in verdicts.items():
            verdict = read_verdict(OUTPUT, hour, settings) or {}
            say(f"   {hour}: DAG run {state} in {seconds:.0f} s, quality {verdict.get('status', '?').upper()}; "
                f"report {PREFIX}/reports/hourly_city_sales/hour={hour}/index.html "
                f"(file: {shown(bucket / 'reports' / 'hourly_city_sales' / f'hour={hour}' / 'index.html')})")
        objects = s3.list_files(PREFIX, settings, recursive=True)
        for hour in complete_hours(OUTPUT, settings):
            files = [o for o in objects if f"/output/hour={hour}/" in o]
            say(f"   {OUTPUT}/hour={hour}/: {len(files)} Parquet files; _complete/hour={hour}.json; "
                f"_quality/hour={hour}/ (verdict.json, result.json, docs/)")
        say(f"   {len(objects)} objects in s3://streamjoin: output {OUTPUT} (Delta, partitioned by hour), markers "
            f"{OUTPUT}/_complete/, quality results {OUTPUT}/_quality/, reports {PREFIX}/reports/, snapshots "
            f"{PREFIX}/snapshots/city_info/")
        ok = all(state == "success" for state, _ in verdicts.values()) and len(verdicts) == len(g.silent)
        say(f"   every object is a file under {shown(bucket)}/ (open a report there in a browser)")
        say(f"demo {'passed' if ok else 'FAILED'} in {time.time() - started:.0f} s. `make airflow` next finds all of it "
            f"(the same S3 folder, the app's checkpoint in {shown(app.checkpoint)}): trigger "
            f"hourly_enrichment_report with hour 2024-01-01T02 (README: the first hour) to see a run succeed at once")
        return 0 if ok else 1
    finally:
        if process is not None and process.poll() is None:
            process.kill()
        server.stop()


_shown: list[str] = []


def _wait(condition, process, what: str, timeout: float = 300, allow_exit: bool = False) -> None:
    deadline = time.time() + timeout
    while not condition():
        if not allow_exit and process.poll() is not None:
            raise RuntimeError(f"the app exited (code {process.poll()}) while waiting for {what}: see its app.log")
        if time.time() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(1)


def _rename_a_store(folder: Path) -> None:
    path = next(folder.glob("*.csv"))
    rows = list(csv.DictReader(path.open()))
    rows[0]["store_name"] += " (renovated)"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _reports(env: dict, hours: list[str], airflow_env, server, home: Path) -> dict[str, tuple[str, float]]:
    home.mkdir(parents=True, exist_ok=True)
    aenv = {**airflow_env(home, server.env(), 8080), **env, "STREAMJOIN_MARKER_POKE_SECONDS": "5"}
    airflow = str(Path(sys.executable).with_name("airflow"))
    subprocess.run([airflow, "db", "migrate"], env=aenv, check=True, capture_output=True, cwd=ROOT)
    results = {}
    for i, hour in enumerate(hours):
        began = time.time()
        done = subprocess.run([airflow, "dags", "test", "hourly_enrichment_report", f"2030-01-01T{i:02d}:00:00+00:00",
                               "-c", json.dumps({"app": "hourly_city_sales", "hour": hour})],
                              env=aenv, capture_output=True, text=True, cwd=ROOT)
        log = done.stdout + done.stderr
        (home / f"dags-test-{hour}.log").write_text(log)
        succeeded = done.returncode == 0 and re.search(r"Marking run .* successful", log) is not None
        results[hour] = ("success" if succeeded else "failed", time.time() - began)
        say(f"   {hour}: run {results[hour][0]} ({time.time() - began:.0f} s; log {home / f'dags-test-{hour}.log'})")
    return results


if __name__ == "__main__":
    sys.exit(main())
