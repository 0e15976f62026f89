"""Where the time of one `bench/run.py` workload goes (issue 42: "say where time goes in the slowest
workload"): streamjoin runs it as `make bench` does, while

- every process of its tree is sampled for CPU (psutil, every 0.2 s): the JVM (Spark), the driver's
  Python, Spark's Python workers;
- py-spy (in a virtualenv of its own, bench/.venv-profile: a profiling tool, never in
  requirements.txt) samples the Python stacks of the driver and of every Python worker
  (`--subprocesses`), only while they run (no idle samples), and the functions of streamjoin (and
  the libraries it calls) are ranked by the share of those samples that pass through them.

It writes a Markdown report (docs/benchmarks-profile.md by default) that docs/benchmarks.md links:

    .venv/bin/python bench/hotspots.py            # the slowest workload of docs/benchmarks.json
    .venv/bin/python bench/hotspots.py --workload changing
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from run import WORKLOADS, Counter, Result, command, log, slowest, workload_data  # noqa: E402

PROFILE_VENV = HERE / ".venv-profile"  # (the module is not `profile.py`: bench/ is first on run.py's path, and the standard library has a `profile`)
PY_SPY = "py-spy==0.4.3"
RATE = 20  # samples a second per process (50 made the changing workload's run 2.4x as long)


def py_spy() -> Path:
    binary = PROFILE_VENV / "bin" / "py-spy"
    stamp = PROFILE_VENV / ".installed"
    if not stamp.exists() or stamp.read_text() != PY_SPY:
        log(f"setting up py-spy in {PROFILE_VENV}")
        subprocess.run(["python3", "-m", "venv", str(PROFILE_VENV)], check=True)
        subprocess.run([str(PROFILE_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", PY_SPY], check=True)
        stamp.write_text(PY_SPY)
    return binary


def kind(process: psutil.Process) -> str:
    """The part of the run a process is: the JVM, the driver's Python or a Python worker."""
    name = process.name()
    if name == "java":
        return "JVM (Spark)"
    line = " ".join(process.cmdline())
    return "Python workers (Spark's)" if "pyspark.daemon" in line or "pyspark.worker" in line else "driver Python"


def profile(workload: str, data: Path, work: Path) -> dict:
    join = WORKLOADS[workload][0]
    spec, dirs, expected = workload_data(data, workload, 1)
    run_dir = Path(tempfile.mkdtemp(prefix=f"profile-{workload}-", dir=work))
    cmd, marker = command("streamjoin", join, spec, dirs, run_dir)
    env = {**os.environ, "PYSPARK_PYTHON": str(ROOT / ".venv" / "bin" / "python")}
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=(run_dir / "stderr.log").open("wb"), env=env, cwd=ROOT)
    counter = Counter(proc.stdout, marker)
    counter.start()
    raw = run_dir / "stacks.txt"
    spy = subprocess.Popen([str(py_spy()), "record", "--pid", str(proc.pid), "--subprocesses", "--rate", str(RATE),
                            "--format", "raw", "--output", str(raw), "--nonblocking"],
                           stdout=subprocess.DEVNULL, stderr=(run_dir / "py-spy.log").open("wb"))
    root = psutil.Process(proc.pid)
    cpu: dict[int, tuple[str, float]] = {}
    while proc.poll() is None:
        for p in [root, *root.children(recursive=True)]:
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    cpu[p.pid] = (kind(p), t.user + t.system)  # (a child is python until it execs java)
            except psutil.Error:
                pass
        time.sleep(0.2)
    counter.join()
    seconds = time.perf_counter() - started
    try:
        spy.wait(timeout=60)
    except subprocess.TimeoutExpired:
        spy.kill()
    by_kind: dict[str, float] = collections.Counter()
    for part, used in cpu.values():
        by_kind[part] += used
    stacks = raw.read_text().splitlines() if raw.exists() else []
    shutil.rmtree(run_dir / "checkpoint", ignore_errors=True)
    return {"workload": workload, "seconds": seconds, "rows_out": counter.rows, "expected": expected, "cpu": dict(by_kind),
            "functions": functions(stacks), "samples": sum(_count(s) for s in stacks), "exit": proc.returncode}


def _count(line: str) -> int:
    return int(line.rsplit(" ", 1)[1]) if " " in line else 0


def functions(stacks: list[str], top: int = 20) -> list[tuple[str, int]]:
    """The functions of streamjoin and of the libraries it calls, by the samples that pass through
    them (each counted once per sample, however deep it recurses)."""
    seen: dict[str, int] = collections.Counter()
    for line in stacks:
        stack, _, count = line.rpartition(" ")
        names = set()
        for frame in stack.split(";"):
            # py-spy's raw frames: "function (path/to/file.py:line)"
            name, _, where = frame.partition(" (")
            where = where.rstrip(")").rsplit(":", 1)[0]
            if "streamjoin/" in where:
                module = where.split("streamjoin/", 1)[1].removesuffix(".py").replace("/", ".")
                names.add(f"streamjoin.{module}.{name}")
            elif any(lib in where for lib in ("pyarrow/", "pandas/", "numpy/", "pyspark/")):
                lib = next(lib for lib in ("pyarrow", "pandas", "numpy", "pyspark") if f"{lib}/" in where)
                names.add(f"{lib} ({name})" if lib != "pyspark" else f"pyspark.{where.split('pyspark/', 1)[1].removesuffix('.py').replace('/', '.')}.{name}")
        for name in names:
            seen[name] += int(count)
    return sorted(seen.items(), key=lambda kv: -kv[1])[:top]


def report(found: dict, path: Path) -> None:
    total_cpu = sum(found["cpu"].values())
    lines = [
        "# Where the time goes: the slowest workload",
        "",
        f"Written by `bench/hotspots.py --workload {found['workload']}`, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC "
        f"(docs/benchmarks.md: the workload furthest below Flink). One run of streamjoin at 1x, as `make bench` runs it, "
        f"sampled while it ran: {found['seconds']:.1f} s{found['unsampled']}, {found['rows_out']:,} rows out "
        f"({found['expected']:,} expected). The shares are what counts: py-spy reads every Python process's memory "
        "on the same two cores, which slows the run.",
        "",
        "## CPU by process",
        "",
        "| process | CPU s | share |",
        "|---|---|---|",
        *[f"| {part} | {used:.1f} | {used / total_cpu:.0%} |" for part, used in sorted(found["cpu"].items(), key=lambda kv: -kv[1])],
        f"| all | {total_cpu:.1f} | over {found['seconds']:.1f} s on 2 cores |",
        "",
        "## Python: the functions the busy samples pass through",
        "",
        f"py-spy, {RATE} samples a second of every Python process while it runs ({found['samples']:,} samples): the share of "
        "them whose stack holds the function (a caller and its callee both count a sample, so shares add up to more than 100%).",
        "",
        "| function | samples | share |",
        "|---|---|---|",
        *[f"| `{name}` | {n:,} | {n / max(found['samples'], 1):.0%} |" for name, n in found["functions"]],
        "",
    ]
    path.write_text("\n".join(lines))
    log(f"wrote {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="slowest",
                        help=f"of {', '.join(WORKLOADS)}; slowest (default): the 1x workload of --results furthest below its target")
    parser.add_argument("--results", default=str(ROOT / "docs" / "benchmarks.json"))
    parser.add_argument("--report", default=str(ROOT / "docs" / "benchmarks-profile.md"))
    parser.add_argument("--data", default=str(HERE / ".data"))
    args = parser.parse_args()
    if args.workload == "slowest":
        worst = slowest([Result(**r) for r in json.loads(Path(args.results).read_text())["results"]])
        if worst is None:
            parser.error(f"{args.results} has no 1x workload that both engines ran")
        args.workload = worst[0]
        log(f"profiling {worst[0]}: {worst[1]:.2f}x Flink in {args.results}")
    saved = [r for r in json.loads(Path(args.results).read_text())["results"]
             if (r["workload"], r["size"], r["engine"]) == (args.workload, 1.0, "streamjoin") and not r["error"]]
    with tempfile.TemporaryDirectory(prefix="streamjoin-profile-") as work:
        found = profile(args.workload, Path(args.data), Path(work))
    if found["exit"] != 0:
        log(f"the run failed (exit {found['exit']})")
        return 1
    found["unsampled"] = (f" (unsampled, in {Path(args.results).name}: {statistics.median(r['seconds'] for r in saved):.1f} s)"
                          if saved else "")
    report(found, Path(args.report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
