"""`make bench`: streamjoin against PyFlink (and hand-written PySpark where Spark can express
the job) on the same files, the same join, every result row written to stdout by each.

    .venv/bin/python bench/run.py [--sizes 1] [--workloads inner-sparse,full-dense]
                                  [--engines streamjoin,flink,pyspark] [--rounds 2]
                                  [--growth-sizes 4,16 --growth-workloads inner-sparse]
                                  [--steady 2000,10000] [--hourly 1000,10000]
                                  [--report docs/benchmarks.md]

It builds what it needs: the data (bench/.data, generated once per size, fixed seed) with the
exact join counts, and PyFlink in its own virtualenv (bench/.venv-flink, from
bench/requirements-flink.txt: Flink's pins never touch the project's). Each job is a separate
process timed from its start to its exit (JVM start included for both engines); its stdout is
counted, and a run whose row count differs from the exact count is reported as wrong. The
order of the engines alternates by round. The report (tables, PNG plots, the machine, every
ratio) is written from this run's figures only.

`--steady RATES` adds the steady-state runs (bench/steady.py: latency and CPU per row at a fixed
input rate, 1-minute windows against Flink, 1-hour windows batch against native);
`--steady-only docs/benchmarks.json` runs only those and keeps that file's throughput results.
`--hourly RATES` adds the hourly enrichment app's hour-commit latency (bench/hourly.py: the app as
deployed, an hour marked complete in S3 how long after the clock passes its end; the target is
60 s); with `--merge JSON --workloads ""` only those run.

1x = 1M rows per stream. Sparse: 50k keys, about 1 partner per row; dense: 10k keys, about
10. The window is +-1 minute (`r.rowtime BETWEEN l.rowtime - 1 minute AND l.rowtime + 1
minute`); sizes grow the time span (keys fixed), so the rows inside a window stay the same.
`three-inner` joins a third stream `m` the same way (`l JOIN m ... JOIN r ...`, both windows
around l's rowtime) on the sparse data: about 1M rows out at 1x.

For streamjoin runs the highest `state_rows` of the run's `<checkpoint>/status.json` (sampled
while it runs) is kept as the peak state rows; the other engines' state is not measured.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import nexmark  # noqa: E402
from datagen import Spec, generate, generate_changing_table, generate_table, generate_three, rows_window_count  # noqa: E402
from steady import spawning  # noqa: E402

MILLION = 1_000_000
WORKLOADS = {  # name: (join, keys, partners per row)
    "inner-sparse": ("INNER", 50_000, 1),
    "full-sparse": ("FULL", 50_000, 1),
    "inner-dense": ("INNER", 10_000, 10),
    "full-dense": ("FULL", 10_000, 10),
    # streamjoin's own operator (Python per key group): one output row per l row; Flink SQL has
    # no streaming ASOF join, so the figure is compared with Flink's interval join on the same data
    "asof-sparse": ("ASOF LEFT", 50_000, 1),
    # the same on a ROWS-window join (each side: the latest row of its key), about 2 rows out per key
    # and l or r row after the first of its key; compared with Flink's interval join too
    "rows-sparse": ("ROWS", 50_000, 1),
    # three streams, l JOIN m JOIN r, both interval conditions on l's rowtime (INNER); the l and r
    # files of inner-sparse plus a stream m
    "three-inner": ("INNER3", 50_000, 1),
    # the l stream of inner-sparse joined with a 1M-row table (a stream-table snapshot join): about
    # 91% of rows find their table row; rows/s counts the stream's rows
    "snapshot": ("SNAPSHOT", 50_000, 1),
    # the same files as a regular join of two append-only streams (RisingWave's join without a time
    # bound, issue 40): every row of both kept; rows/s counts both streams' rows
    "regular": ("REGULAR", 50_000, 1),
    # the same files as a semi and an anti join (issue 67: `WHERE EXISTS` / `WHERE NOT EXISTS (SELECT
    # * FROM t WHERE t.id = l.k)`, RisingWave's and Flink's regular semi / anti joins without a time
    # bound): each l row once if its key is in t (SEMI) or once if it is not (ANTI: an l row written
    # before its t row arrives is withdrawn then); both a changelog counted folded; rows/s counts both streams' rows
    "semi": ("SEMI", 50_000, 1),
    "anti": ("ANTI", 50_000, 1),
    # the l stream joined with a table that changes (issue 40: RisingWave's regular join with a CDC
    # table): the snapshot workload's table as Debezium JSON events, every 10th row updated and every
    # id 5 mod 20 deleted after; both engines write a changelog, counted folded (inserts less
    # withdrawals: the stream rows whose key is left in the table); rows/s counts the stream's rows
    "changing": ("CHANGING", 50_000, 1),
    # Nexmark's join queries (bench/nexmark.py) on 1M events x size (persons, auctions and bids, the
    # Nexmark model's mix); rows/s counts the events of the streams the query reads
    "nexmark-q3": ("NEXMARK-Q3", 0, 0),
    "nexmark-q8": ("NEXMARK-Q8", 0, 0),
    "nexmark-q20": ("NEXMARK-Q20", 0, 0),
}
COMPARED = {"asof-sparse": "inner-sparse", "rows-sparse": "inner-sparse"}  # the Flink run a workload without its own is compared with
ENGINES = ("streamjoin", "flink", "pyspark")
# streamjoin with one implementation forced (issue 66: each overlapping pair measured, the
# implementation that is nowhere better retired): engine label -> (environment, what runs)
IMPLEMENTATIONS = {
    # (a two-stream RANGE join with EMIT FINAL is no longer the operator's: lower.strategy.custom_reason)
    "streamjoin:operator": ({"STREAMJOIN_JOIN_OPERATOR": "custom"}, "streamjoin's operator (by column where it applies)"),
    "streamjoin:operator-rows": ({"STREAMJOIN_JOIN_OPERATOR": "custom", "STREAMJOIN_OPERATOR_COLUMNAR": "0"},
                                 "streamjoin's operator, row by row"),
    "streamjoin:native": ({"STREAMJOIN_JOIN_OPERATOR": "native"}, "Spark's streaming join"),
    "streamjoin:scan": ({"STREAMJOIN_BATCH_PROBE": "scan"}, "the batch join scanning its retained steps"),
    "streamjoin:tasks": ({"STREAMJOIN_KEYED_PROBE_IN": "tasks"}, "the batch join's keyed probe in Spark tasks"),
}
# the workloads whose join has more than one implementation, and the implementations each can take
COMPARED_IMPLEMENTATIONS = {
    "inner-sparse": ("streamjoin", "streamjoin:tasks", "streamjoin:scan", "streamjoin:native"),
    "asof-sparse": ("streamjoin", "streamjoin:operator", "streamjoin:operator-rows"),
    "rows-sparse": ("streamjoin", "streamjoin:operator", "streamjoin:operator-rows"),
}
FLINK_VENV = HERE / ".venv-flink"

REGULAR_SQL = """CREATE SOURCE l (k INT, v INT) WITH (connector = 'files', path = '{l}') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE t (id INT, name VARCHAR, price DOUBLE) WITH (connector = 'files', path = '{r}') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW joined AS SELECT l.k AS k, l.v AS lv, t.name AS name, t.price AS price FROM l JOIN t ON l.k = t.id;
"""
FILTER_SQL = """CREATE SOURCE l (k INT, v INT) WITH (connector = 'files', path = '{l}') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE t (id INT, name VARCHAR, price DOUBLE) WITH (connector = 'files', path = '{r}') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW filtered AS SELECT l.k AS k, l.v AS lv FROM l WHERE {exists} (SELECT * FROM t WHERE t.id = l.k);
"""
CHANGING_SQL = """CREATE SOURCE l (k INT, v INT) WITH (connector = 'files', path = '{l}') FORMAT PLAIN ENCODE JSON;
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR, price DOUBLE) WITH (connector = 'files', path = '{r}') FORMAT DEBEZIUM ENCODE JSON;
CREATE MATERIALIZED VIEW joined AS SELECT l.k AS k, l.v AS lv, t.name AS name, t.price AS price FROM l JOIN t ON l.k = t.id;
"""
SNAPSHOT_SQL = """CREATE STREAM l (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{l}');
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), price DOUBLE) WITH (connector = 'files', format = 'json', path = '{r}');
SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, t.name AS name, t.price AS price FROM l JOIN t ON l.k = t.id;
"""
ASOF_SQL = """CREATE STREAM l (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{l}');
CREATE STREAM r (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{r}');
SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv FROM l ASOF LEFT JOIN r ON l.k = r.k AND r.ROWTIME <= l.ROWTIME;
"""
ROWS_SQL = """CREATE STREAM l (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{l}');
CREATE STREAM r (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{r}');
SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv
  FROM l OVER (PARTITION BY k ROWS CURRENT ROW) JOIN r OVER (PARTITION BY k ROWS CURRENT ROW) ON l.k = r.k;
"""
THREE_SQL = """CREATE STREAM l (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{l}');
CREATE STREAM m (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{m}');
CREATE STREAM r (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{r}');
SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, m.v AS mv, r.v AS rv FROM l
  JOIN m ON l.k = m.k AND m.ROWTIME BETWEEN l.ROWTIME - INTERVAL '{s}' SECOND AND l.ROWTIME + INTERVAL '{s}' SECOND
  JOIN r ON l.k = r.k AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '{s}' SECOND AND l.ROWTIME + INTERVAL '{s}' SECOND;
"""
SQL = """CREATE STREAM l (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{l}');
CREATE STREAM r (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{r}');
SELECT STREAM ROWTIME, {key} AS k, l.v AS lv, r.v AS rv FROM l {join} JOIN r
  ON l.k = r.k AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '{s}' SECOND AND l.ROWTIME + INTERVAL '{s}' SECOND;
"""


@dataclass
class Result:
    engine: str
    workload: str
    size: float
    rows_in: int
    expected: int
    seconds: float = 0.0
    rows_out: int = 0
    cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    error: str = ""
    extra: dict = field(default_factory=dict)
    # the highest `state_rows` seen in streamjoin's <checkpoint>/status.json; None: not measured
    # (other engines, results saved before the field existed)
    peak_state_rows: int | None = None

    @property
    def ok(self) -> bool:
        return not self.error and self.rows_out == self.expected

    @property
    def rows_per_s(self) -> float:
        return self.rows_in / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_row(self) -> float:
        return self.cpu_seconds / self.rows_in * 1e6


def log(text: str) -> None:
    print(f"[bench {dt.datetime.now():%H:%M:%S}] {text}", file=sys.stderr, flush=True)


def flink_python() -> Path:
    python = FLINK_VENV / "bin" / "python"
    stamp = FLINK_VENV / ".installed"
    wanted = (HERE / "requirements-flink.txt").read_text()
    if not stamp.exists() or stamp.read_text() != wanted:
        log(f"setting up PyFlink in {FLINK_VENV} (first run downloads about 300 MB)")
        subprocess.run(["python3", "-m", "venv", str(FLINK_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", str(HERE / "requirements-flink.txt")], check=True)
        stamp.write_text(wanted)
    return python


CHANGELOG = b"changelog"  # a changelog's rows counted folded: inserts less withdrawals
CHANGELOGS = ("CHANGING", "SEMI", "ANTI")  # the joins whose output is one


class Counter(threading.Thread):
    """Counts result rows on a pipe: lines, or for Flink's print sink the `+I[` records; a
    changelog (marker CHANGELOG) folded: Flink's `+I[` and `+U[` less `-U[` and `-D[`, streamjoin's
    lines less twice its `"op": "-D"` ones."""

    def __init__(self, stream, marker: bytes | None):
        super().__init__(daemon=True)
        self.stream, self.marker, self.rows = stream, marker, 0

    def run(self) -> None:
        if self.marker == CHANGELOG:
            return self._changelog()
        carry = b""
        while chunk := self.stream.read(1 << 20):
            if self.marker is None:
                self.rows += chunk.count(b"\n")
            else:
                data = carry + chunk
                self.rows += data.count(self.marker)
                carry = data[-(len(self.marker) - 1):]


    def _changelog(self) -> None:
        for line in self.stream:  # Flink's print sink leads a line with its subtask ("2> +I[...]")
            if line.startswith(b"{"):
                self.rows += -1 if b'"op": "-D"' in line else 1
            elif b"+I[" in line or b"+U[" in line:
                self.rows += 1
            elif b"-U[" in line or b"-D[" in line:
                self.rows -= 1


def _state_rows(status: Path | None) -> int | None:
    """`state_rows` of streamjoin's status file, or None when there is none yet (it is replaced
    atomically, so a read sees a whole file)."""
    if status is None:
        return None
    try:
        return int(json.loads(status.read_text())["state_rows"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _plan_ran(status: Path) -> str:
    """What streamjoin's status file says ran: the plan's run and each join's implementation and
    engine (lower.physical), "" when it has none."""
    try:
        plan = json.loads(status.read_text())["plan"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    plans = plan if isinstance(plan, list) else [plan]
    joins = [f"{j['implementation']} on {j['engine']}" + (f" (probe {j['probe']}, {j.get('probe_in', '')})".replace(", )", ")")
                                                         if j.get("probe") else "")
             + (f" (by column: {j['by_column']})" if j.get("by_column") else "")
             for p in plans if isinstance(p, dict) for j in p.get("joins", [])]
    return "; ".join(joins)


def timed(cmd: list[str], marker: bytes | None, env: dict, result: Result, log_path: Path, status: Path | None = None) -> None:
    """Runs `cmd`, counting its stdout rows, its process tree's CPU and peak RSS; with `status`
    (streamjoin's status.json) also the highest `state_rows` it shows, read at every sample."""
    started = time.perf_counter()
    peak: list[int] = []
    with log_path.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, cwd=ROOT)
        counter = Counter(proc.stdout, marker)
        counter.start()
        ps = psutil.Process(proc.pid)
        cpu: dict[int, float] = {}  # the last CPU time seen of every process of the tree (the JVMs are
        while proc.poll() is None:  # grandchildren: RUSAGE_CHILDREN misses them)
            rss = 0
            for p in [ps, *ps.children(recursive=True)]:
                try:
                    with p.oneshot():
                        t = p.cpu_times()
                        cpu[p.pid] = t.user + t.system
                        rss += 0 if spawning(p) else p.memory_info().rss
                except psutil.Error:
                    pass
            result.peak_rss_mb = max(result.peak_rss_mb, rss / 2**20)
            if (rows := _state_rows(status)) is not None:
                peak.append(rows)
            time.sleep(0.2)
        counter.join()
    if (rows := _state_rows(status)) is not None:  # the last write, after the last sample
        peak.append(rows)
    result.peak_state_rows = max(peak) if peak else None
    result.seconds = time.perf_counter() - started
    result.cpu_seconds = sum(cpu.values())
    result.rows_out = counter.rows
    if proc.returncode != 0:
        result.error = f"exit {proc.returncode}: " + log_path.read_text(errors="replace").strip().splitlines()[-1:][0][:300] \
            if log_path.read_text(errors="replace").strip() else f"exit {proc.returncode}"


def workload_data(data: Path, workload: str, size: float) -> tuple[Spec, dict[str, Path], int]:
    """The workload's spec, its input folders by stream name (l, r and for three-inner m: generated
    once; for Nexmark person, auction and bid) and the exact row count its runs must give."""
    join, keys, matches = WORKLOADS[workload]
    spec = Spec(rows=int(size * MILLION), keys=keys, matches=matches)
    if join.startswith("NEXMARK-"):
        dirs, counts = nexmark.generate(data, spec.rows)
        return spec, dirs, counts[join.split("-")[1].lower()]
    if join == "INNER3":
        l_dir, m_dir, r_dir, counts = generate_three(data, spec)
        return spec, {"l": l_dir, "m": m_dir, "r": r_dir}, counts[join]
    if join == "CHANGING":
        l_dir, t_dir, counts = generate_changing_table(data, spec)
        return spec, {"l": l_dir, "r": t_dir}, counts["CHANGING"]
    if join in ("SNAPSHOT", "REGULAR", "SEMI", "ANTI"):  # (t's ids are unique: SEMI's rows are the join's)
        l_dir, t_dir, counts = generate_table(data, spec)
        return spec, {"l": l_dir, "r": t_dir}, spec.rows - counts["SNAPSHOT"] if join == "ANTI" else counts["SNAPSHOT"]
    l_dir, r_dir, counts = generate(data, spec)
    if join == "ASOF LEFT":  # one row per l row
        return spec, {"l": l_dir, "r": r_dir}, spec.rows
    if join == "ROWS":
        return spec, {"l": l_dir, "r": r_dir}, rows_window_count(spec)
    return spec, {"l": l_dir, "r": r_dir}, counts[join]


def not_applicable(engine: str, workload: str) -> str:
    """Why `engine` does not run `workload` ("n/a: ..."), or "" when it does."""
    join = WORKLOADS[workload][0]
    if join == "ASOF LEFT" and not engine.startswith("streamjoin"):
        return f"n/a: no streaming ASOF join in {engine}; compared with its {COMPARED[workload]} run"
    if join == "ROWS" and not engine.startswith("streamjoin"):
        return f"n/a: no ROWS-window join in {engine}; compared with its {COMPARED[workload]} run"
    if engine == "pyspark" and join in ("REGULAR", "CHANGING", "SEMI", "ANTI"):
        return "n/a: a Spark streaming join needs a time bound to end (bench/pyspark_job.py)"
    if engine == "pyspark" and join.startswith("NEXMARK-"):
        return "n/a: the hand-written PySpark job (bench/pyspark_job.py) runs the interval join only"
    if engine == "pyspark" and join == "INNER3":
        return "n/a: the hand-written PySpark job (bench/pyspark_job.py) is two-stream only"
    if engine == "pyspark" and join not in ("INNER", "SNAPSHOT"):
        return "n/a: a Spark streaming outer join has no end of input (bench/pyspark_job.py)"
    return ""


def command(engine: str, join: str, spec: Spec, dirs: dict[str, Path], run_dir: Path) -> tuple[list[str], bytes | None]:
    """The engine's command line for the join, and the marker of a result row on its stdout
    (None: a line is a row)."""
    if join.startswith("NEXMARK-"):
        query = join.split("-")[1].lower()
        if engine == "streamjoin":
            sql = run_dir / "q.sql"
            sql.write_text(nexmark.streamjoin_sql(query, dirs))
            return [str(ROOT / ".venv" / "bin" / "streamjoin"), "run", str(sql), "--dialect", "risingwave", "--until-idle",
                    "--checkpoint", str(run_dir / "checkpoint")], None
        return [str(flink_python()), str(HERE / "flink_job.py"), str(dirs["person"].parent), "-", join, "0"], b"+I["
    l_dir, r_dir = str(dirs["l"]), str(dirs["r"])
    if engine.startswith("streamjoin"):
        query = run_dir / "q.sql"
        key = "l.k" if join in ("INNER", "INNER3") else "COALESCE(l.k, r.k)"
        text = {"ASOF LEFT": ASOF_SQL, "INNER3": THREE_SQL, "ROWS": ROWS_SQL, "SNAPSHOT": SNAPSHOT_SQL,
                "REGULAR": REGULAR_SQL, "CHANGING": CHANGING_SQL, "SEMI": FILTER_SQL, "ANTI": FILTER_SQL}.get(join, SQL)
        query.write_text(text.format(l=l_dir, m=dirs.get("m"), r=r_dir, join=join, key=key, s=spec.window_ms // 1000,
                                     exists="NOT EXISTS" if join == "ANTI" else "EXISTS"))
        dialect = ["--dialect", "risingwave"] if join in ("REGULAR", "CHANGING", "SEMI", "ANTI") else []
        return [str(ROOT / ".venv" / "bin" / "streamjoin"), "run", str(query), *dialect, "--until-idle",
                "--checkpoint", str(run_dir / "checkpoint")], CHANGELOG if join in CHANGELOGS else None
    if engine == "flink":
        more = [str(dirs["m"])] if join == "INNER3" else []
        marker = CHANGELOG if join in CHANGELOGS else b"+I["
        join = "SNAPSHOT" if join == "REGULAR" else join  # Flink's job for it is a regular join already
        return [str(flink_python()), str(HERE / "flink_job.py"), l_dir, r_dir, join, str(spec.window_ms), *more], marker
    return [str(ROOT / ".venv" / "bin" / "python"), str(HERE / "pyspark_job.py"), l_dir, r_dir, join,
            str(spec.window_ms), str(run_dir / "checkpoint")], None


def run_one(engine: str, workload: str, size: float, data: Path, work: Path) -> Result:
    join = WORKLOADS[workload][0]
    spec, dirs, expected = workload_data(data, workload, size)
    result = Result(engine, workload, size, input_rows(workload, spec, dirs), expected)
    if why := not_applicable(engine, workload):
        result.error = why
        return result
    env = {**os.environ, "PYSPARK_PYTHON": str(ROOT / ".venv" / "bin" / "python"), **IMPLEMENTATIONS.get(engine, ({},))[0]}
    run_dir = Path(tempfile.mkdtemp(prefix=f"{engine.replace(':', '-')}-{workload}-", dir=work))
    cmd, marker = command(engine, join, spec, dirs, run_dir)
    status = run_dir / "checkpoint" / "status.json" if engine.startswith("streamjoin") else None
    timed(cmd, marker, env, result, run_dir / "stderr.log", status)
    if status is not None and (ran := _plan_ran(status)):
        result.extra["plan"] = ran
    shutil.rmtree(run_dir / "checkpoint", ignore_errors=True)
    verdict = "ok" if result.ok else f"WRONG ({result.rows_out} rows, expected {result.expected}) {result.error}"
    state = f" state {result.peak_state_rows:,}" if result.peak_state_rows is not None else ""
    log(f"{engine:10s} {workload:12s} {size:g}x {result.seconds:7.1f} s {result.rows_per_s:10,.0f} rows/s "
        f"cpu {result.cpu_us_per_row:6.1f} us/row rss {result.peak_rss_mb:6.0f} MB{state}  {verdict}")
    return result


def machine() -> dict:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    flink = FLINK_VENV / "bin" / "python"
    flink_version = subprocess.run([str(flink), "-c", "import importlib.metadata as m; print(m.version('apache-flink'))"],
                                   capture_output=True, text=True).stdout.strip() if flink.exists() else "not installed"
    import pyspark
    return {"cpu": f"{model}, {os.cpu_count()} cores", "memory": f"{psutil.virtual_memory().total / 2**30:.0f} GiB",
            "os": platform.platform(), "python": platform.python_version(), "java": java,
            "spark": pyspark.__version__, "flink": flink_version, "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def median(results: list[Result], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in results)


def peak_state_cell(results: list[Result]) -> str:
    """The median peak state rows of the runs that measured it, or "-" (Flink, PySpark, old results)."""
    known = [r.peak_state_rows for r in results if r.peak_state_rows is not None]
    return f"{statistics.median(known):,.0f}" if known else "-"


def input_rows(workload: str, spec: Spec, dirs: dict[str, Path]) -> int:
    """The rows a workload's rows/s counts: its streams' (Nexmark: the events of the streams its query reads)."""
    join = WORKLOADS[workload][0]
    if join.startswith("NEXMARK-"):
        rows = nexmark.generate(dirs["person"].parent.parent, spec.rows)[1]["rows"]
        return sum(rows[name] for name in nexmark.READS[join.split("-")[1].lower()])
    return streams(workload) * spec.rows


def streams(workload: str) -> int:
    """The streams whose rows a workload's rows/s counts (a table's rows are not counted)."""
    return {"INNER3": 3, "SNAPSHOT": 1, "CHANGING": 1}.get(WORKLOADS[workload][0], 2)


def run_steady(rates: list[int], seconds: int) -> list[dict]:
    """bench/steady.py's configurations: per rate, streamjoin (its default operator, EMIT FINAL and
    EMIT EAGER), its keyed probe in Spark tasks instead of the driver, and Flink with 1-minute windows; at the highest
    rate, the batch join scanning its retained steps (its keyed probe off), and 1-hour windows on the batch and the
    native join."""
    from steady import run_steady as steady

    flink = flink_python()
    work = Path(tempfile.mkdtemp(prefix="streamjoin-steady-"))
    runs = [(engine, rate, 60, "auto", query) for rate in rates
            for engine, query in (("streamjoin", "interval"), ("flink", "interval"), ("streamjoin", "eager"))]
    runs += [("streamjoin", max(rates), 60, "scan", "interval")]  # the batch join without its keyed probe, to compare
    runs += [("streamjoin", rate, 60, "tasks", "interval") for rate in rates]  # its keyed probe in Spark tasks, to compare
    runs += [("streamjoin", max(rates), 3600, operator, "interval") for operator in ("batch", "native")]
    out = []
    for engine, rate, window, operator, query in runs:
        r = steady(engine, rate, window, seconds, operator, work, flink, query).as_dict()
        log(f"steady {engine:10s} {operator:6s} {query:8s} {rate:6d} rows/s window {window:4d} s: p50 {r['p50_ms']:,.0f} ms "
            f"p99 {r['p99_ms']:,.0f} ms cpu {r['cpu_us_per_row']:.1f} us/row rows out {r['rows_out']:,} {r['error']}")
        out.append(r)
    shutil.rmtree(work, ignore_errors=True)
    return out


def steady_lines(steady: list[dict], meta: dict) -> list[str]:
    if not steady:
        return []
    lines = ["## Steady state: latency and CPU at a fixed input rate", "",
             f"`bench/steady.py` via `bench/run.py {shlex.join(meta.get('steady_argv', meta['argv']))}`, started "
             f"{meta.get('steady_started', meta['started'])}. One file per stream every second, `rate` rows each, rowtime =",
             "the wall clock, keys such that a row has about one partner in the window, a 2 s watermark lag",
             "(lateness) for both engines; latency = a join row read on stdout minus the landing of the later of its",
             "two input files (the first 10 s of files left out); CPU = the process tree's CPU over the generator's",
             f"run ({steady[0]['seconds']} s) divided by the input rows. streamjoin's EMIT FINAL rows come out in rowtime order, so",
             "a row waits for the watermark: its floor is the lateness (2 s) (target: p99 at most the lateness + 0.5 s).",
             "Flink's interval join emits at once, and so does streamjoin's under EMIT EAGER (`--query eager`: an INNER",
             "join's rows as the batch join finds them; target: p50 and p99 below Flink's).",
             "streamjoin's rows out are fewer: the rows of the last seconds wait for a clock that no later input moves",
             "(the run stops 20 s after the last file). With 1-hour windows the run fills a sixtieth of the window, so few",
             "rows match.", "",
             "| rows/s per stream | window | engine | operator | emit | p50 latency | p99 latency | CPU us/row | rows out | target |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    full = [r for r in steady if r.get("measured_from_s")]
    steady = [r for r in steady if not r.get("measured_from_s")]
    flink = {(r["rate"], r["window_s"]): r for r in steady if r["engine"] == "flink"}
    native = {(r["rate"], r["window_s"]): r for r in steady if r["operator"] == "native"}
    for r in steady:
        target = ""
        if r["operator"] == "scan":
            target = "to compare: the batch join scanning its retained steps (STREAMJOIN_BATCH_PROBE=scan)"
        elif r["operator"] == "tasks":
            target = "to compare: the keyed probe in Spark tasks, not the driver (STREAMJOIN_KEYED_PROBE_IN=tasks)"
        elif r["engine"] == "streamjoin" and r["window_s"] == 60 and (r["rate"], 60) in flink:
            f = flink[(r["rate"], 60)]
            cpu = r["cpu_us_per_row"] <= f["cpu_us_per_row"]
            if r.get("query") == "eager":
                latency = r["p50_ms"] < f["p50_ms"] and r["p99_ms"] < f["p99_ms"]
                target = f"p50 and p99 < Flink's: {'met' if latency else 'not met'}; "
            else:
                target = f"p99 <= {FINAL_P99_MS / 1000:.1f} s: {'met' if r['p99_ms'] <= FINAL_P99_MS else 'not met'}; "
            target += (f"CPU <= Flink's ({f['cpu_us_per_row']:.1f}): "
                       f"{'met' if cpu else 'not met'} ({r['cpu_us_per_row'] / f['cpu_us_per_row']:.2f}x)")
        elif r["engine"] == "streamjoin" and r["operator"] == "batch" and (r["rate"], r["window_s"]) in native:
            n = native[(r["rate"], r["window_s"])]
            ok = r["p99_ms"] <= n["p99_ms"] and r["cpu_us_per_row"] <= n["cpu_us_per_row"]
            target = f"no worse than native on p99 and CPU: {'yes' if ok else 'no'}"
            if r["seconds"] < 2 * r["window_s"]:  # retained rows grow until the window is full
                filled = f", but the run fills {r['seconds'] / (2 * r['window_s']):.0%} of the window: "
                if any((f["rate"], f["window_s"], f["operator"]) == (r["rate"], r["window_s"], r["operator"]) for f in full):
                    target += filled + "with the window full, below"
                else:
                    target += filled + "a full window's cost is not measured (the keyed probe holds its rows in memory)"
        window = f"{r['window_s'] // 60} min" if r["window_s"] < 3600 else f"{r['window_s'] // 3600} h"
        emit = "-" if r["engine"] != "streamjoin" else "EAGER" if r.get("query") == "eager" else "FINAL"
        lines.append(f"| {r['rate']:,} | {window} | {r['engine']} | {r['operator']} | {emit} | {r['p50_ms'] / 1000:.2f} s | "
                     f"{r['p99_ms'] / 1000:.2f} s | {r['cpu_us_per_row']:.1f} | {r['rows_out']:,} | {target} |")
    return lines + [""] + full_window_lines(full, native)


def full_window_lines(full: list[dict], native: dict) -> list[str]:
    """The steady runs measured once their window was full (bench/steady.py --measure-from, added
    with `--render JSON --full-window JSONL`), against the native join's run above."""
    if not full:
        return []
    lines = ["### With the window full", "",
             "Runs of `bench/steady.py` long enough to fill the window, their figures taken once it was full: the",
             "rows of the files from `--measure-from` seconds on and the CPU from then (the window holds",
             "rate x window rows per stream by then). Peak memory: the engine's processes' RSS together, over the",
             "whole run. The native join's 1-hour run above is the comparison: it falls behind at this rate",
             "already with its window 1% filled, and a fuller window only adds to its state. `make bench` does not",
             "repeat these hour-long runs: a run keeps those of the report it replaces.", "",
             "| command | p50 latency | p99 latency | CPU us/row | peak memory | rows out (whole run) | target: no worse than native on p99 and CPU |",
             "|---|---|---|---|---|---|---|"]
    for r in full:
        command = (f"bench/steady.py --rates {r['rate']} --window {r['window_s']} --seconds {r['seconds']} "
                   f"--measure-from {r['measured_from_s']} --engines {r['engine']} --operator {r['operator']}")
        n = native.get((r["rate"], r["window_s"]))
        target = "no native run to compare" if n is None else (
            f"{'met' if r['p99_ms'] <= n['p99_ms'] and r['cpu_us_per_row'] <= n['cpu_us_per_row'] else 'not met'} "
            f"(native: p99 {n['p99_ms'] / 1000:.2f} s, {n['cpu_us_per_row']:.1f} us/row)")
        lines.append(f"| `{command}` | {r['p50_ms'] / 1000:.2f} s | {r['p99_ms'] / 1000:.2f} s | {r['cpu_us_per_row']:.1f} | "
                     f"{r.get('peak_rss_gb', 0):.1f} GB ({retained_bytes(r):,.0f} bytes a retained row) | {r['rows_out']:,} | {target} |")
    return lines + [""]


def retained_bytes(r: dict) -> float:
    """A full-window run's peak memory over the rows its window holds (rate x window, both streams)."""
    return r.get("peak_rss_gb", 0) * 2**30 / (2 * r["rate"] * r["window_s"])


# issue 42's throughput targets: streamjoin's rate / Flink's on the same files (at least); the
# workloads it names no figure for are held to Flink's rate
TARGETS = {"three-inner": 1.5, "rows-sparse": 1.0, "asof-sparse": 1.0}
FINAL_P99_MS = 2500  # EMIT FINAL at a steady rate: p99 at most the lateness (bench/steady.py: 2 s) + 0.5 s (issue 42)


def _profile_lines(results: list[Result]) -> list[str]:
    """Where the report says the slowest workload's time goes (bench/hotspots.py's report)."""
    worst = slowest(results)
    if worst is None:
        return []
    profiled = ""
    if PROFILE.exists() and (line := next((x for x in PROFILE.read_text().splitlines() if x.startswith("Written by")), "")):
        profiled = f" (that report: {line.removeprefix('Written by ').split(' (')[0]})"
    return [f"Where the time goes in the workload furthest below its target, `{worst[0]}` ({worst[1]:.2f}x Flink): "
            f"[benchmarks-profile.md](benchmarks-profile.md){profiled}, written by `bench/hotspots.py --workload slowest` "
            "(`make bench` runs it after the runs): the CPU of the JVM and of the Python processes, and the Python "
            "functions py-spy finds busiest.", ""]


def ratios(results: list[Result], size: float = 1) -> dict[str, float]:
    """streamjoin's input rows/s over Flink's (or the Flink run it is compared with) per workload
    at `size`, where both ran and every count was exact."""
    groups: dict[tuple, list[Result]] = {}
    for r in results:
        groups.setdefault((r.workload, r.size, r.engine), []).append(r)
    found = {}
    for workload in WORKLOADS:
        runs = groups.get((workload, size, "streamjoin"))
        own = [r for r in groups.get((workload, size, "flink"), []) if not r.error.startswith("n/a")]
        flink = own or groups.get((COMPARED.get(workload), size, "flink"))
        if runs and flink and all(r.ok for r in runs + flink):
            found[workload] = median(runs, "rows_per_s") / median(flink, "rows_per_s")
    return found


def slowest(results: list[Result]) -> tuple[str, float] | None:
    """The 1x workload furthest below its target against Flink (bench/hotspots.py profiles it)."""
    found = ratios(results)
    if not found:
        return None
    workload = min(found, key=lambda w: found[w] / TARGETS.get(w, 1.0))
    return workload, found[workload]


PROFILE = ROOT / "docs" / "benchmarks-profile.md"


def implementation_lines(groups: dict) -> list[str]:
    """The report's comparison of the implementations a join can take (`--implementations`): each
    forced in turn on the same files, against streamjoin's default choice."""
    forced = sorted({(w, s) for w, s, e in groups if e in IMPLEMENTATIONS}, key=lambda k: (k[1], list(WORKLOADS).index(k[0])))
    if not forced:
        return []
    lines = ["## Implementations compared", "",
             "The joins that more than one implementation can run, each forced in turn (its environment variable) on",
             "the same files as its workload above, a bounded run (`--until-idle`) like the rest; \"what ran\" is the",
             "plan the run recorded in its status.json (lower.physical: each join's implementation and engine).",
             "A bounded run joins its one slice by scanning it, so the keyed probe's settings do not change it: the",
             "probe's places and scanning live are compared in \"Steady state\" below. The operator's EMIT FINAL",
             "RANGE join (`STREAMJOIN_JOIN_OPERATOR=custom` on inner-sparse) was retired on 2026-12-07 after this",
             "comparison measured it at 0.26-0.29x the default. docs/architecture.md says which implementations",
             "stay and why.", "",
             "| workload | size | forced | what ran | seconds | input rows/s | vs default | CPU us/row | peak RSS MB | rows out | exact |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for workload, size in forced:
        default = groups.get((workload, size, "streamjoin"))
        base = median(default, "rows_per_s") if default and all(r.ok for r in default) else None
        for engine in ("streamjoin", *IMPLEMENTATIONS):
            runs = groups.get((workload, size, engine))
            if not runs:
                continue
            env = " ".join(f"{k}={v}" for k, v in IMPLEMENTATIONS[engine][0].items()) if engine in IMPLEMENTATIONS else "(default)"
            lines.append(result_row([workload, f"{size:g}x", env, runs[0].extra.get("plan", "-")], runs, base, state=False))
    return lines + [""]


def result_row(lead: list[str], runs: list[Result], base: float | None, state: bool = True) -> str:
    """A table row of the runs' medians after the `lead` cells: seconds, rows/s, the ratio to
    `base` (rows/s), CPU, peak RSS, peak state rows (`state`), rows out and the exact count; or
    the first wrong run's count and error."""
    cells = " | ".join(lead)
    if not all(r.ok for r in runs):
        bad = next(r for r in runs if not r.ok)
        return f"| {cells} | {' | '.join(['-'] * (6 if state else 5))} | {bad.rows_out:,} | {bad.expected:,}: {bad.error or 'WRONG COUNT'} |"
    rate = median(runs, "rows_per_s")
    ratio = f"{rate / base:.2f}x" if base else "-"
    peak = f" {peak_state_cell(runs)} |" if state else ""
    return (f"| {cells} | {median(runs, 'seconds'):.1f} | {rate:,.0f} | {ratio} | {median(runs, 'cpu_us_per_row'):.1f} | "
            f"{median(runs, 'peak_rss_mb'):,.0f} |{peak} {runs[0].rows_out:,} | {runs[0].expected:,} |")


def target_lines(groups: dict, keys: list, steady: list[dict]) -> list[str]:
    """The report's table of which target each measured workload meets (issue 42)."""
    lines = ["## Targets", "",
             "Issue 42's targets against this report's figures: input rows/s at least the ratio to Flink's (1.00x where",
             "the issue names none; ROWS and ASOF against Flink's interval join of the same files), peak memory at",
             "most Flink's on every 1x workload; at a steady 2K and 10K rows/s per stream, p50 and p99 latency below",
             "Flink's (EMIT EAGER: each pair as soon as both rows are staged), EMIT FINAL's p99 at most the lateness + 0.5 s,",
             "and CPU per row at most Flink's; a full 1-hour window at 10K rows/s per stream in at most 6 GB.", "",
             "| what | measured | target | met |", "|---|---|---|---|"]
    for workload, size in keys:
        runs = groups.get((workload, size, "streamjoin"))
        own = [r for r in groups.get((workload, size, "flink"), []) if not r.error.startswith("n/a")]
        flink = own or groups.get((COMPARED.get(workload), size, "flink"))
        if not runs or not flink or not all(r.ok for r in runs + flink):
            continue
        ratio, want = median(runs, "rows_per_s") / median(flink, "rows_per_s"), TARGETS.get(workload, 1.0)
        lines.append(f"| {workload} {size:g}x: rows/s vs Flink | {ratio:.2f}x | >= {want:.2f}x | {'yes' if ratio >= want else 'no'} |")
        if size == 1:
            mine, theirs = median(runs, "peak_rss_mb"), median(flink, "peak_rss_mb")
            lines.append(f"| {workload} 1x: peak memory | {mine:,.0f} MB | <= Flink's {theirs:,.0f} MB | {'yes' if mine <= theirs else 'no'} |")
    flink_steady = {r["rate"]: r for r in steady if r["engine"] == "flink" and r["window_s"] == 60 and not r.get("measured_from_s")}
    for r in steady:
        f = flink_steady.get(r["rate"])
        if r["engine"] != "streamjoin" or r["operator"] != "auto" or r["window_s"] != 60 or f is None:
            continue
        if r.get("query") != "eager":  # FINAL: its floor is the lateness; its CPU per row is the default's
            ok = r["p99_ms"] <= FINAL_P99_MS
            lines.append(f"| steady {r['rate']:,} rows/s, EMIT FINAL: p99 | {r['p99_ms']:,.1f} ms | <= lateness + 0.5 s "
                         f"({FINAL_P99_MS:,} ms) | {'yes' if ok else 'no'} |")
        measures = (("p50", "p50_ms", "ms"), ("p99", "p99_ms", "ms")) if r.get("query") == "eager" else (
            ("CPU per row", "cpu_us_per_row", "us"),)
        for name, key, unit in measures:
            ok = r[key] < f[key] if unit == "ms" else r[key] <= f[key]
            sign = "<" if unit == "ms" else "<="
            emit = "EMIT EAGER" if r.get("query") == "eager" else "EMIT FINAL"
            lines.append(f"| steady {r['rate']:,} rows/s, {emit}: {name} | {r[key]:,.1f} {unit} | {sign} Flink's {f[key]:,.1f} {unit} | "
                         f"{'yes' if ok else 'no'} |")
    for r in steady:
        if r.get("measured_from_s") and r["window_s"] == 3600:
            gb = r.get("peak_rss_gb", 0)
            lines.append(f"| full 1-hour window at {r['rate']:,} rows/s: peak memory | {gb:.1f} GB ({retained_bytes(r):,.0f} bytes a "
                         f"retained row) | <= 6 GB | {'yes' if gb * 2**30 <= 6e9 else 'no'} |")
    return lines + [""]


def workload_notes(workloads: set[str]) -> list[str]:
    """What the report says, above its table, about the workloads that are not a plain two-stream
    interval join, for those it holds."""
    notes = []
    if "rows-sparse" in workloads:
        notes += [
            "", "`rows-sparse`: `l OVER (PARTITION BY k ROWS CURRENT ROW) JOIN r OVER (PARTITION BY k ROWS CURRENT ROW)",
            "ON l.k = r.k` on the inner-sparse data: each row pairs with the other stream's latest row of its key",
            "(exact count in SEMANTICS.md §2 order: `datagen.rows_window_count`), a bounded run: on Spark's batch engine",
            "(lower/batch/rows_batch.py, docs/runtime.md; a live run is on streamjoin's operator, by column: docs/custom-operator.md);",
            "Flink SQL has no ROWS-window join, so its \"vs Flink\" is against Flink's inner-sparse",
            "interval join of the same files (issue 42's target: at least 1.0x)."]
    if "asof-sparse" in workloads:
        notes += [
            "", "`asof-sparse`: `l ASOF LEFT JOIN r ON l.k = r.k AND r.ROWTIME <= l.ROWTIME` on the inner-sparse",
            "data (one row out per l row), a bounded run: on Spark's batch engine (lower/batch/asof_batch.py, docs/runtime.md; a live",
            "run is on streamjoin's operator, by column: docs/custom-operator.md); Flink SQL has no streaming ASOF",
            "join, so its \"vs Flink\" is against Flink's inner-sparse interval join of the same files",
            "(issue 42's target: at least 1.0x)."]
    if any(streams(w) == 3 for w in workloads):
        notes += [
            "", "`three-inner`: three streams, `l JOIN m ON l.k = m.k AND m.ROWTIME BETWEEN l.ROWTIME - 1 minute AND",
            "l.ROWTIME + 1 minute JOIN r ON` the same with r, on the inner-sparse files of l and r plus a stream m",
            "generated the same way; its input rows/s counts the rows of all three streams. Flink runs the same",
            "SQL (two chained interval joins); the hand-written PySpark job is two-stream only."]
    if any(w.startswith("nexmark-") for w in workloads):
        notes += [
            "", "`nexmark-q3`, `nexmark-q8`, `nexmark-q20`: the join queries of the Nexmark benchmark as Flink's and",
            "RisingWave's editions write them (bench/nexmark.py: q3 auctions of category 10 with their sellers in OR, ID",
            "or CA, a regular join; q8 people who opened an auction in the 10-second window they registered in, two",
            "tumbling-window aggregations joined; q20 bids of category-10 auctions with their auctions, a regular join),",
            "on 1M events x size written from the Nexmark model (1 person, 3 auctions, 46 bids in 50 events, hot sellers,",
            "auctions and bidders; 10,000 events a second of event time), the same files for both engines. streamjoin",
            "runs the RisingWave text (`--dialect risingwave`, the query as a materialized view), Flink its own",
            "(q8 with TUMBLE table functions). rows/s counts the events of the streams the query reads."]
    if "regular" in workloads:
        notes += [
            "", "`regular`: the snapshot workload's files as a regular join of two append-only streams",
            "(`--dialect risingwave`, `l JOIN t ON l.k = t.id` without a time bound: every row of both kept, issue 40),",
            "a bounded run on Spark's batch engine (live, streamjoin's own operator keeps them); Flink runs the same",
            "regular join (its snapshot job). rows/s counts both streams' rows."]
    if {"semi", "anti"} & workloads:
        notes += [
            "", "`semi`, `anti`: the regular workload's files as `SELECT l.k, l.v FROM l WHERE EXISTS (SELECT * FROM t",
            "WHERE t.id = l.k)` and the same with `NOT EXISTS` (issue 67; `--dialect risingwave`): a regular semi / anti",
            "join without a time bound, each l row once if its key is (is not) an id of t. Flink runs the same SQL (its",
            "regular semi / anti join, a changelog: an anti row written before its t row arrives is withdrawn then);",
            "streamjoin's bounded run is on its micro-batch loop (Spark's batch engine: a semi row once its first",
            "partner is read, the anti rows at the end of input; live, its operator writes and withdraws them as",
            "Flink does). Counted folded. rows/s counts both streams' rows."]
    if "changing" in workloads:
        notes += [
            "", "`changing`: the l stream joined with a table that changes (issue 40: RisingWave's regular join with a CDC",
            "table), `l JOIN t ON l.k = t.id`: the snapshot workload's table as Debezium JSON events (a create per row,",
            "then an update of every 10th row, then a delete of every id 5 mod 20; `datagen.generate_changing_table`),",
            "read by streamjoin as `FORMAT DEBEZIUM ENCODE JSON` and by Flink as `debezium-json`. Both write a",
            "changelog; the count is folded (inserts less withdrawals), which must be the stream rows whose key is left",
            "in the table. rows/s counts the stream's rows; the table's 1.15M events are in the time."]
    if "snapshot" in workloads:
        notes += [
            "", "`snapshot`: the inner-sparse l stream joined with a 1M-row table, `l JOIN t ON l.k = t.id`, about 91%",
            "of l rows finding their table row (`datagen.generate_table`); rows/s counts the stream's rows, the table's",
            "load is in the time. streamjoin runs it as a stream-table snapshot join, Flink as a regular join of the",
            "stream and the table read as a bounded source (its state holds both), PySpark as a stream-static join."]
    return notes


def report(results: list[Result], path: Path, meta: dict, steady: list[dict] | None = None, hourly: list[dict] | None = None) -> None:
    """docs/benchmarks.md (and its plots, and the results as JSON beside it, which `--render` reads
    back) from one run's results; `meta`: its arguments, start time and machine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[tuple, list[Result]] = {}
    for r in results:
        groups.setdefault((r.workload, r.size, r.engine), []).append(r)
    keys = sorted({(w, s) for w, s, _ in groups}, key=lambda k: (k[1], list(WORKLOADS).index(k[0])))
    engines = [e for e in ENGINES if any(g[2] == e for g in groups)]
    lines = [
        "# Benchmarks", "",
        f"Written by `make bench` (`bench/run.py {shlex.join(meta['argv'])}`), started {meta['started']}"
        + "".join(f"; then the runs of `bench/run.py {shlex.join(m['argv'])}`, started {m['started']}, replaced "
                  "the earlier ones of the same workload, size and engine" for m in merges(meta))
        + ". Every figure here",
        f"is from {'these runs' if merges(meta) else 'that run'}"
        + (" but the hour-long runs of \"With the window full\" (kept from the report it replaced)"
           if any(r.get("measured_from_s") for r in steady or []) else "")
        + "; rerun it to refresh them. Each job is its own process, timed from start to",
        "exit; rows/s counts input rows (of every stream: two, three for three-inner, the stream only for snapshot); CPU is the user+system time of the process",
        "and its children; RSS is the peak resident memory of the process tree, sampled every 0.2 s (since 2026-11-29",
        "without a JVM's child caught between its clone and its exec, which shows the JVM's pages again:",
        "bench/steady.py `spawning`; runs before counted the JVM twice when a sample caught one). Figures are medians",
        "over the rounds; the engine order alternates by round.", "",
        "Peak state rows (streamjoin only; \"-\" where not measured: Flink, PySpark, runs saved before it was):",
        "the highest `state_rows` in the run's `<checkpoint>/status.json`, read every 0.2 s while it runs",
        "and once after it exits. That file is written after each micro-batch, so a peak inside a batch is",
        "not seen. What it counts depends on the operator the query runs on (`streamjoin explain`): for",
        "Spark's native stream-stream joins, the rows of Spark's state stores (`numRowsTotal`, every join",
        "of a chain); for the batch interval join, the rows of the retained staged steps (written after a",
        "slice is joined: an `--until-idle` run whose input is joined in one slice retains none, so 0); for streamjoin's",
        "own operator, the rows it holds. Rows waiting in the ordered output (released in rowtime order)",
        "are not counted. It is not comparable between operators, nor with Flink's state.", "",
        *_profile_lines(results),
        "## Machine", "", *(f"- {k}: {v}" for k, v in meta["machine"].items()), "",
        "## Interval joins, every row to stdout", "",
        "| workload | size | engine | seconds | input rows/s | vs Flink | CPU us/row | peak RSS MB | peak state rows | rows out | exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for workload, size in keys:
        own = [r for r in groups.get((workload, size, "flink"), []) if not r.error.startswith("n/a")]  # n/a: Flink cannot run it
        flink = own or groups.get((COMPARED.get(workload), size, "flink"))
        flink_rate = median(flink, "rows_per_s") if flink and all(r.ok for r in flink) else None
        for engine in engines:
            runs = groups.get((workload, size, engine))
            if not runs:
                continue
            lines.append(result_row([workload, f"{size:g}x", engine], runs, flink_rate))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure = path.with_name("benchmarks-throughput.png")
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / max(1, len(engines))
    for i, engine in enumerate(engines):
        values = [median(groups[(w, s, engine)], "rows_per_s") if (w, s, engine) in groups
                  and all(r.ok for r in groups[(w, s, engine)]) else 0 for w, s in keys]
        ax.bar([x + i * width for x in range(len(keys))], values, width, label=engine)
    ax.set_xticks([x + width * (len(engines) - 1) / 2 for x in range(len(keys))], [f"{w}\n{s:g}x" for w, s in keys], fontsize=8)
    ax.set_ylabel("input rows/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(figure, dpi=100)
    lines += ["", f"![input rows/s]({figure.name})", ""]
    sizes = sorted({s for _, s in keys})
    if len(sizes) > 1:
        steps = [f"{a:g}x to {b:g}x" for a, b in zip(sizes, sizes[1:], strict=False)]
        lines += ["## Growth", "",
                  "Input rows/s at each size, and the seconds each million input rows added cost from one size to",
                  "the next. Fixed costs (starting the JVM and the engine) weigh most on small runs, so rows/s",
                  "rises with the size for every engine; the cost is linear when the added seconds per million",
                  "rows stay the same from step to step (the target: within 20%, the last column).", "",
                  "| workload | engine | " + " | ".join(f"{s:g}x rows/s" for s in sizes) + " | "
                  + " | ".join(f"s per 1M rows, {t}" for t in steps) + " | last step / first step |",
                  "|---|---|" + "---|" * (2 * len(sizes))]
        growth = path.with_name("benchmarks-growth.png")
        fig, ax = plt.subplots(figsize=(7, 4))
        for workload in WORKLOADS:
            for engine in engines:
                rates = [median(groups[(workload, s, engine)], "rows_per_s") if (workload, s, engine) in groups
                         and all(r.ok for r in groups[(workload, s, engine)]) else None for s in sizes]
                if sum(v is not None for v in rates) < 2:
                    continue
                cells = " | ".join(f"{v:,.0f}" if v else "-" for v in rates)
                known = [v for v in rates if v]
                seconds = [median(groups[(workload, s, engine)], "seconds") if v else None for s, v in zip(sizes, rates, strict=True)]
                pairs = list(zip(sizes, seconds, strict=True))
                added = [(b_t - a_t) / ((b - a) * streams(workload)) if a_t is not None and b_t is not None else None  # streams of 1M x size
                         for (a, a_t), (b, b_t) in zip(pairs, pairs[1:], strict=False)]
                steps_text = " | ".join(f"{v:.2f}" if v is not None else "-" for v in added)
                given = [v for v in added if v is not None]
                ratio = f"{given[-1] / given[0]:.2f}" if len(given) > 1 else "-"
                lines.append(f"| {workload} | {engine} | {cells} | {steps_text} | {ratio} |")
                ax.plot([s for s, v in zip(sizes, rates, strict=True) if v], known, marker="o", label=f"{engine} {workload}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("size (x 1M rows per stream)")
        ax.set_ylabel("input rows/s")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(growth, dpi=100)
        lines += ["", f"![growth]({growth.name})", ""]
    lines += implementation_lines(groups)
    lines += target_lines(groups, keys, steady or [])
    lines += steady_lines(steady or [], meta)
    lines += hourly_lines(hourly or [])
    at = lines.index("## Interval joins, every row to stdout") + 1
    lines[at:at] = workload_notes({w for w, _ in keys})
    lines += ["## Not measured by this command yet", "",
              "- peak state rows of Flink and of the hand-written PySpark job.", ""]
    lines += ["## Every run", "", "| round | engine | workload | size | seconds | rows out | ok |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.extra.get('round', '')} | {r.engine} | {r.workload} | {r.size:g}x | {r.seconds:.1f} | {r.rows_out:,} | "
              f"{'yes' if r.ok else 'no: ' + (r.error or 'count')} |" for r in results]
    path.write_text("\n".join(lines) + "\n")
    (path.with_suffix(".json")).write_text(json.dumps({"meta": meta, "results": [r.__dict__ for r in results],
                                                       "steady": steady or [], "hourly": hourly or []}, indent=1))
    log(f"wrote {path}")


def run_hourly(rates: list[int], hours: int, argv: list[str]) -> list[dict]:
    """bench/hourly.py at each rate: per hour end, the seconds from the app's clock passing it to
    its completeness marker in S3."""
    from hourly import measure

    started = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    out = []
    for rate in rates:
        out += [{**r, "rate": rate, "argv": argv, "started": started} for r in measure(rate, hours, log=lambda text: log(f"hourly {text}"))]
    return out


def hourly_lines(hourly: list[dict]) -> list[str]:
    if not hourly:
        return []
    first = hourly[0]
    lines = ["## Hourly enrichment: an hour in S3 after the clock passes its end", "",
             f"`bench/hourly.py` via `bench/run.py {shlex.join(first['argv'])}`, started {first['started']}. The app as deployed",
             "(include/apps/hourly_city_sales: spark-submit, its query with a 2-minute lateness, a Delta sink on the embedded",
             "S3 server), fed one file of sales a second whose rowtimes run 6x the wall clock across an hour's end. The",
             "latency runs from the file that moves the clock (latest rowtime - lateness) past the hour's end landing to",
             "the hour's `_complete` marker in S3 (polled every 0.2 s); the marker's rows must be one per city (200).", "",
             "| sales/s | hour | seconds after the clock passed its end | rows | target: <= 60 s |", "|---|---|---|---|---|"]
    for r in hourly:
        seconds = "no marker in 300 s" if r["latency_s"] is None else f"{r['latency_s']:.1f}"
        met = r["ok"] and r["latency_s"] is not None and r["latency_s"] <= 60
        lines.append(f"| {r['rate']:,} | {r['hour']} | {seconds} | {r['rows']} | {'met' if met else 'not met'} |")
    return [*lines, ""]


def _unknown(plan: list[tuple[float, str, list[str]]]) -> str | None:
    for _, name, names in plan:
        if name not in WORKLOADS:
            return f"unknown workload {name!r}: choose from {', '.join(WORKLOADS)}"
        for engine in names:
            if engine not in ENGINES and engine not in IMPLEMENTATIONS:
                return f"unknown engine {engine!r}: choose from {', '.join((*ENGINES, *IMPLEMENTATIONS))}"
    return None


def kept_full_windows(saved: Path) -> list[dict]:
    """The full-window runs (an hour or more each, `--full-window`) of the report a run replaces: no
    run of `make bench` repeats them, and its Targets table judges the 1-hour window's memory by them."""
    if not saved.exists():
        return []
    return [r for r in json.loads(saved.read_text()).get("steady", []) if r.get("measured_from_s")]


def add_full_window(steady: list[dict], jsonl: Path) -> list[dict]:
    """The steady runs with those of `jsonl` (bench/steady.py --json) measured once the window was
    full, each replacing a saved one of the same configuration."""
    new = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    new = [r for r in new if r.get("measured_from_s")]
    if not new:
        raise SystemExit(f"{jsonl}: no run measured with --measure-from")
    same = {(r["engine"], r["operator"], r["rate"], r["window_s"]) for r in new}
    return [r for r in steady if not (r.get("measured_from_s") and (r["engine"], r["operator"], r["rate"], r["window_s"]) in same)] + new


def merges(meta: dict) -> list[dict]:
    """The `--merge` runs a report holds, in order ({"argv", "started"}); older reports kept one."""
    if "merge_argv" in meta:
        return [{"argv": meta["merge_argv"], "started": meta["merge_started"]}]
    return meta.get("merges", [])


def merge(saved: dict, results: list[Result], meta: dict, steady: list[dict], argv: list[str]):
    """`--merge`: this run's results replace the saved run's of the same engine, workload and size."""
    ran = {(r.engine, r.workload, r.size) for r in results}
    kept = [Result(**r) for r in saved["results"] if (r["engine"], r["workload"], r["size"]) not in ran]
    saved_meta = saved["meta"]
    kept_meta = {k: v for k, v in saved_meta.items() if k not in ("merge_argv", "merge_started")}
    return kept + results, {**kept_meta, "merges": [*merges(saved_meta), {"argv": argv, "started": meta["started"]}]}, \
        steady or saved.get("steady", [])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1", help="comma-separated multiples of 1M rows per stream (default 1)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help=f"of {', '.join(WORKLOADS)}")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"of {', '.join(ENGINES)}")
    parser.add_argument("--growth-sizes", default="", help="more sizes, for the growth workloads only (e.g. 4,16)")
    parser.add_argument("--growth-workloads", default="inner-sparse")
    parser.add_argument("--growth-engines", default="streamjoin,flink")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--implementations", action="store_true",
                        help="also each implementation a join can take, forced in turn, at the first size "
                        f"({', '.join(COMPARED_IMPLEMENTATIONS)})")
    parser.add_argument("--report", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--data", default=str(HERE / ".data"))
    parser.add_argument("--render", metavar="JSON", help="write the report again from a run's JSON (docs/benchmarks.json); run nothing")
    parser.add_argument("--full-window", metavar="JSONL", help="with --render: add the runs of bench/steady.py --measure-from "
                        "... --json JSONL (a window full before the figures) to the report")
    parser.add_argument("--steady", default="", metavar="RATES",
                        help="also the steady-state runs (bench/steady.py) at these rows/s per stream, e.g. 2000,10000")
    parser.add_argument("--steady-seconds", type=int, default=60, help="how long each steady run's input lasts")
    parser.add_argument("--merge", metavar="JSON",
                        help="run the workloads asked for and write the report with JSON's other results (and its steady runs)")
    parser.add_argument("--hourly", default="", metavar="RATES",
                        help="also the hourly enrichment app's hour-commit latency (bench/hourly.py) at these sales/s, e.g. 1000")
    parser.add_argument("--hourly-hours", type=int, default=3, help="hour ends each hourly run measures")
    parser.add_argument("--steady-only", metavar="JSON",
                        help="run only the steady-state runs, and write the report with the throughput results of JSON")
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        if args.full_window:
            saved["steady"] = add_full_window(saved.get("steady", []), Path(args.full_window))
        report([Result(**r) for r in saved["results"]], Path(args.report), saved["meta"], saved.get("steady"), saved.get("hourly"))
        return 0
    merged = json.loads(Path(args.merge).read_text()) if args.merge else None
    if args.steady_only:
        saved = json.loads(Path(args.steady_only).read_text())
        meta = {**saved["meta"], "steady_argv": argv, "steady_started": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"}
        steady = run_steady([int(r) for r in (args.steady or "2000,10000").split(",")], args.steady_seconds)
        steady += kept_full_windows(Path(args.steady_only))
        report([Result(**r) for r in saved["results"]], Path(args.report), meta, steady, saved.get("hourly"))
        return 0
    workloads, engines = [w for w in args.workloads.split(",") if w], args.engines.split(",")
    # (size, workload, engines) in the order they run
    plan = [(float(size), w, engines) for size in args.sizes.split(",") for w in workloads]
    if args.growth_sizes:
        plan += [(float(size), w, args.growth_engines.split(",")) for size in args.growth_sizes.split(",")
                 for w in args.growth_workloads.split(",")]
    if args.implementations:
        size = float(args.sizes.split(",")[0])
        plan += [(size, w, [e for e in names if e != "streamjoin" or (size, w) not in {(s, x) for s, x, n in plan if e in n}])
                 for w, names in COMPARED_IMPLEMENTATIONS.items()]
    if unknown := _unknown(plan):
        parser.error(unknown)
    if any("flink" in names for _, _, names in plan):
        flink_python()
    meta = {"argv": argv, "started": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC", "machine": machine()}
    data = Path(args.data)
    results = []
    with tempfile.TemporaryDirectory(prefix="streamjoin-bench-") as work:
        for i, (size, workload, names) in enumerate(plan):
            log(f"data {workload} {size:g}x: {workload_data(data, workload, size)[2]:,} rows expected")
            for rnd in range(args.rounds):
                for engine in names if (rnd + i) % 2 == 0 else names[::-1]:
                    result = run_one(engine, workload, size, data, Path(work))
                    result.extra["round"] = rnd + 1
                    results.append(result)
    steady = run_steady([int(r) for r in args.steady.split(",")], args.steady_seconds) if args.steady else []
    hourly = run_hourly([int(r) for r in args.hourly.split(",")], args.hourly_hours, argv) if args.hourly else []
    if merged is not None:
        results, meta, steady = merge(merged, results, meta, steady, argv)
        hourly = hourly or merged.get("hourly", [])
    else:
        steady += kept_full_windows(Path(args.report).with_suffix(".json"))
    wrong = [r for r in results if not r.ok and not r.error.startswith("n/a")]
    wrong += [r for r in hourly if not r["ok"]]
    report(results, Path(args.report), meta, steady, hourly)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
