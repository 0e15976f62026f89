"""Steady state: the interval join with inputs arriving at a fixed rate, streamjoin against
PyFlink. End-to-end latency (a row's later-landing input file -> its join row read on stdout;
p50, p99) and CPU per input row over the measured window.

    .venv/bin/python bench/steady.py [--rates 2000,10000] [--window 60] [--seconds 60]
                                     [--engines streamjoin,flink] [--operator auto|native|batch|scan|tasks]
                                     [--query interval|eager|rows]

A generator writes one JSON Lines file per stream every second (tmp name, then renamed into the
folder: the landing), `rate` rows each, rowtimes spread over the second before it (the wall
clock), keys drawn so that a row has about one partner inside the window (keys = rate x 2 x
window). `v` numbers each stream's rows, so the file (and landing time) of both inputs of an
output row is known. Both engines read the folders continuously with a 2 s watermark lag:
`streamjoin run` (lateness = '2 SECONDS', EMIT FINAL: rows come out in rowtime order, once the
watermark passes them; `--query eager`: EMIT EAGER, each row as soon as the join finds it), and
Flink SQL's filesystem source (`source.monitor-interval` 1 s,
WATERMARK rowtime - 2 s, print sink). Each engine gets a warm-up before the generator starts;
the rows of the first 10 s of files are left out of the figures, and so is the CPU of the
warm-up. `--measure-from S` leaves out the rows of the first S seconds' files and the CPU before
(a 1-hour window is full after 3600 s). Peak memory: the engine's processes' RSS together. Writes nothing to docs by itself: `bench/run.py --steady` puts its figures in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
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
LATENESS_S = 2
WARMUP_S = {"streamjoin": 30, "flink": 20}
SKIP_S = 10  # the first files' rows are left out (engines settling)

SQL = """CREATE STREAM l (k BIGINT, v BIGINT) WITH (connector = 'files', format = 'json', path = '{l}', lateness = '{lateness} SECONDS');
CREATE STREAM r (k BIGINT, v BIGINT) WITH (connector = 'files', format = 'json', path = '{r}', lateness = '{lateness} SECONDS');
SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv FROM l JOIN r
  ON l.k = r.k AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '{w}' SECOND AND l.ROWTIME + INTERVAL '{w}' SECOND;
"""

# the same files through a ROWS-window join by column (each row meets the latest row of its key on
# the other side): the operator path's cost at a steady rate (`--query rows`, streamjoin only;
# 2026-11-26 at 10K rows/s: 83 us CPU per row, p99 8.1 s: its state is pickled every micro-batch)
ROWS_SQL = """CREATE STREAM l (k BIGINT, v BIGINT) WITH (connector = 'files', format = 'json', path = '{l}', lateness = '{lateness} SECONDS');
CREATE STREAM r (k BIGINT, v BIGINT) WITH (connector = 'files', format = 'json', path = '{r}', lateness = '{lateness} SECONDS');
SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv
  FROM l OVER (PARTITION BY k ROWS CURRENT ROW) JOIN r OVER (PARTITION BY k ROWS CURRENT ROW) ON l.k = r.k;
"""
# the interval join with EMIT EAGER (`--query eager`): an INNER join's rows as soon as the batch join
# has found them, not once the watermark passes them (issue 42's latency; Flink runs its interval join)
EAGER_SQL = SQL.replace("SECOND;\n", "SECOND EMIT EAGER;\n")
QUERIES = {"interval": SQL, "rows": ROWS_SQL, "eager": EAGER_SQL}

FLINK_LINE = re.compile(rb"\+I\[[^,]*, (-?\d+), (\d+), (\d+)\]")


@dataclass
class Steady:
    engine: str
    operator: str
    rate: int
    window_s: int
    seconds: int
    rows_in: int = 0  # input rows of the measured window (both streams)
    rows_out: int = 0
    cpu_seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    measured_from_s: int = 0  # the figures leave out the rows of earlier files and the CPU before (--measure-from)
    peak_rss_gb: float = 0.0  # GiB: the engine's processes together, sampled every 5 s
    error: str = ""
    query: str = "interval"  # streamjoin's query (QUERIES): "eager" is the interval join under EMIT EAGER

    def pct(self, q: float) -> float:
        s = sorted(self.latencies_ms)
        return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")

    @property
    def cpu_us_per_row(self) -> float:
        return self.cpu_seconds / self.rows_in * 1e6 if self.rows_in else float("nan")

    def as_dict(self) -> dict:
        return {"engine": self.engine, "operator": self.operator, "rate": self.rate, "window_s": self.window_s,
                "seconds": self.seconds, "rows_in": self.rows_in, "rows_out": self.rows_out,
                "p50_ms": self.pct(0.5), "p99_ms": self.pct(0.99), "cpu_us_per_row": self.cpu_us_per_row,
                "measured_from_s": self.measured_from_s, "peak_rss_gb": round(self.peak_rss_gb, 2), "error": self.error,
                "query": self.query}


class Generator(threading.Thread):
    """One file per stream per second; `landed[stream][i]`: when file i became visible."""

    def __init__(self, dirs: dict[str, Path], rate: int, seconds: int, keys: int):
        super().__init__(daemon=True)
        self.dirs, self.rate, self.seconds, self.keys = dirs, rate, seconds, keys
        self.landed: dict[str, list[float]] = {s: [] for s in dirs}
        self.rng = random.Random(7)

    def run(self) -> None:
        start = time.time()
        for i in range(self.seconds):
            due = start + i + 1
            time.sleep(max(0.0, due - time.time()))
            now = time.time()
            for stream, folder in self.dirs.items():
                stamps = sorted(now - 1 + self.rng.random() for _ in range(self.rate))
                lines = [json.dumps({"rowtime": dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
                                     "k": self.rng.randrange(self.keys), "v": i * self.rate + n})
                         for n, t in enumerate(stamps)]
                tmp = folder / f".{i:06d}.json"
                tmp.write_text("\n".join(lines) + "\n")
                os.replace(tmp, folder / f"{i:06d}.json")
                self.landed[stream].append(time.time())


def _command(engine: str, run_dir: Path, dirs: dict[str, Path], window_s: int, operator: str, flink_python: Path | None,
             query_kind: str) -> tuple[list[str], dict[str, str]]:
    """The engine's command line and environment."""
    env = {**os.environ, "PYSPARK_PYTHON": str(ROOT / ".venv" / "bin" / "python")}
    if engine == "streamjoin":
        query = run_dir / "q.sql"
        query.write_text(QUERIES[query_kind].format(l=dirs["l"], r=dirs["r"], w=window_s, lateness=LATENESS_S))
        # "scan": the batch interval join finding its pairs by scanning the retained steps, as before
        # its keyed probe (docs/runtime.md); "tasks": its keyed probe in Spark tasks, not the driver
        env["STREAMJOIN_JOIN_OPERATOR"] = "batch" if operator in ("scan", "tasks") else operator
        if operator == "tasks":
            env["STREAMJOIN_KEYED_PROBE_IN"] = "tasks"
        env["STREAMJOIN_BATCH_PROBE"] = "scan" if operator == "scan" else env.get("STREAMJOIN_BATCH_PROBE", "auto")
        cmd = [str(ROOT / ".venv" / "bin" / "streamjoin"), "run", str(query), "--checkpoint", str(run_dir / "checkpoint")]
    else:
        cmd = [str(flink_python), str(HERE / "flink_steady_job.py"), str(dirs["l"]), str(dirs["r"]), str(window_s * 1000),
               str(LATENESS_S)]
    return cmd, env


def run_steady(engine: str, rate: int, window_s: int, seconds: int, operator: str, work: Path, flink_python: Path | None,
               query_kind: str = "interval", measure_from: int = 0) -> Steady:
    result = Steady(engine, operator if engine == "streamjoin" else "-", rate, window_s, seconds, measured_from_s=measure_from,
                    query=query_kind if engine == "streamjoin" else "interval")
    run_dir = Path(tempfile.mkdtemp(prefix=f"steady-{engine}-", dir=work))
    dirs = {"l": run_dir / "l", "r": run_dir / "r"}
    for d in dirs.values():
        d.mkdir()
    cmd, env = _command(engine, run_dir, dirs, window_s, operator, flink_python, query_kind)
    err = (run_dir / "stderr.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, cwd=ROOT)
    reads: list[tuple[float, int, int]] = []  # (read time, lv, rv)

    def read() -> None:
        for line in proc.stdout:
            now = time.time()
            if engine == "streamjoin":
                if not line.startswith(b"{"):
                    continue  # not a row (a profiler's message, say)
                row = json.loads(line)
                reads.append((now, row["lv"], row["rv"]))
            elif m := FLINK_LINE.search(line):
                reads.append((now, int(m.group(2)), int(m.group(3))))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(WARMUP_S[engine])
    tree = psutil.Process(proc.pid)
    gen = Generator(dirs, rate, seconds, keys=rate * 2 * window_s)
    done = threading.Event()
    threading.Thread(target=_sample_memory, args=(tree, result, done), daemon=True).start()
    cpu_start = _cpu(tree)
    gen.start()
    if measure_from:
        time.sleep(measure_from)
        cpu_start = _cpu(tree)
    gen.join()
    time.sleep(LATENESS_S + 18)  # the last files' rows come through
    cpu_end = _cpu(tree)
    done.set()
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
    reader.join(timeout=10)
    err.close()
    if not reads and proc.returncode not in (0, -15, 143):
        result.error = (run_dir / "stderr.log").read_text(errors="replace")[-300:]
    result.cpu_seconds = cpu_end - cpu_start
    result.rows_in = 2 * rate * (seconds - measure_from)
    result.rows_out = len(reads)
    result.latencies_ms = _latencies(reads, gen, rate, max(SKIP_S, measure_from))
    if os.environ.get("BENCH_KEEP"):
        print(f"kept {run_dir}", file=sys.stderr)
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    return result


def _cpu(tree: psutil.Process) -> float:
    return _over_tree(tree, lambda p: sum(p.cpu_times()[:2]))


def _latencies(reads: list[tuple[float, int, int]], gen: Generator, rate: int, skip: int) -> list[float]:
    """Each output row's latency (ms) from the later landing of its inputs' files, leaving out the first `skip` files."""
    out = []
    for now, lv, rv in reads:
        i, j = lv // rate, rv // rate
        if min(i, j) >= skip:
            out.append((now - max(gen.landed["l"][i], gen.landed["r"][j])) * 1000)
    return out


def _sample_memory(tree: psutil.Process, result: Steady, done: threading.Event) -> None:
    while not done.wait(5):
        result.peak_rss_gb = max(result.peak_rss_gb, _rss(tree) / 2**30)


def _rss(tree: psutil.Process) -> int:
    return _over_tree(tree, lambda p: 0 if spawning(p) else p.memory_info().rss)


def spawning(p: psutil.Process) -> bool:
    """Whether `p` is a JVM's child between its clone and its exec (Java starts a process by
    posix_spawn: the child shares the JVM's memory until it execs, so its RSS is the JVM's again):
    a child of a `java` process with the same command line (its name is the spawning thread's,
    e.g. "Executor task l"). Memory sums skip it, or a sample that catches Spark starting a Python
    worker counts the JVM twice."""
    try:
        parent = p.parent()
        return bool(parent) and parent.name() == "java" and p.cmdline() == parent.cmdline()
    except psutil.Error:
        return False


def _over_tree(tree: psutil.Process, measure):
    """`measure` summed over the process and its children (those that ended meanwhile left out)."""
    total = 0
    for p in [tree, *tree.children(recursive=True)]:
        try:
            total += measure(p)
        except psutil.Error:
            pass
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="2000,10000")
    parser.add_argument("--window", type=int, default=60, help="the join's window: +- this many seconds")
    parser.add_argument("--seconds", type=int, default=60, help="how long the generator runs")
    parser.add_argument("--engines", default="streamjoin,flink")
    parser.add_argument("--operator", default="auto", help="STREAMJOIN_JOIN_OPERATOR for streamjoin (auto, native, batch), or scan: "
                        "the batch join without its keyed probe, or tasks: its keyed probe in Spark tasks")
    parser.add_argument("--query", choices=sorted(QUERIES), default="interval",
                        help="streamjoin's query: the interval join (Flink runs the same), the same under EMIT EAGER, "
                        "or a ROWS join by column")
    parser.add_argument("--measure-from", type=int, default=0,
                        help="figures from this second of input on (CPU, rows, latencies): a window full before it")
    parser.add_argument("--json", help="append each result as a JSON line here")
    args = parser.parse_args(argv)
    flink = None
    if "flink" in args.engines:
        sys.path.insert(0, str(HERE))
        from run import flink_python

        flink = flink_python()
    work = Path(tempfile.mkdtemp(prefix="bench-steady-"))
    for rate in (int(r) for r in args.rates.split(",")):
        for engine in args.engines.split(","):
            r = run_steady(engine, rate, args.window, args.seconds, args.operator, work, flink, args.query, args.measure_from)
            d = r.as_dict()
            print(json.dumps(d), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(d) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
