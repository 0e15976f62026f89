"""Build the driver JVM's class archive (runtime.class_archive): `make setup` runs it.

    python -m streamjoin.warmup [--force]

Runs a few small join programs, one per way a query runs (the batch interval join, a ROWS and an
ASOF join, a stream-table join, windowed aggregations joined on Spark's streaming engine,
streamjoin's own operator on a regular join and on a changing table), each `streamjoin run
--until-idle` with its JVM listing the classes it loads; then writes the archive of them all.
About two minutes; nothing to do when the archive is there and built for this Java and
these jars (`--force` builds it again).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from streamjoin.runtime import class_archive
from streamjoin.runtime.session import BOUNDED_JAVA_OPTIONS
from streamjoin.settings import Settings

_STREAM = "CREATE STREAM {name} (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{path}');"
_SOURCE = ("CREATE SOURCE {name} (k INT, v INT, rowtime TIMESTAMP, WATERMARK FOR rowtime AS rowtime - INTERVAL '2' SECOND) "
           "WITH (connector = 'files', path = '{path}') FORMAT PLAIN ENCODE JSON;")
_WINDOWED = "SELECT k, COUNT(*) AS n, window_start AS ws FROM TUMBLE({name}, rowtime, INTERVAL '10' SECOND) GROUP BY k, window_start"

# (name, dialect, program): placeholders l, r (streams), t (a table), c (the same as change events)
PROGRAMS = [
    ("interval", "", "\n".join([_STREAM.format(name="l", path="{l}"), _STREAM.format(name="r", path="{r}"),
                                "SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv FROM l FULL OUTER JOIN r ON l.k = r.k "
                                "AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '5' SECOND AND l.ROWTIME + INTERVAL '5' SECOND;"])),
    ("rows", "", "\n".join([_STREAM.format(name="l", path="{l}"), _STREAM.format(name="r", path="{r}"),
                            "SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv FROM l OVER (PARTITION BY k ROWS CURRENT ROW) "
                            "JOIN r OVER (PARTITION BY k ROWS CURRENT ROW) ON l.k = r.k;"])),
    ("asof", "", "\n".join([_STREAM.format(name="l", path="{l}"), _STREAM.format(name="r", path="{r}"),
                            "SELECT STREAM ROWTIME, l.k AS k, l.v AS lv, r.v AS rv FROM l ASOF LEFT JOIN r "
                            "ON l.k = r.k AND r.ROWTIME <= l.ROWTIME;"])),
    ("snapshot", "", "\n".join([_STREAM.format(name="l", path="{l}"),
                                "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), price DOUBLE) "
                                "WITH (connector = 'files', format = 'json', path = '{t}');",
                                "SELECT STREAM ROWTIME, l.k AS k, t.name AS name FROM l JOIN t ON l.k = t.id;"])),
    ("windows", "risingwave", "\n".join([_SOURCE.format(name="l", path="{l}"), _SOURCE.format(name="r", path="{r}"),
                                         f"CREATE MATERIALIZED VIEW w AS SELECT a.k, a.n AS ln, b.n AS rn FROM ({_WINDOWED.format(name='l')}) a "
                                         f"JOIN ({_WINDOWED.format(name='r')}) b ON a.k = b.k AND a.ws = b.ws;"])),
    ("regular", "risingwave", "\n".join([_SOURCE.format(name="l", path="{l}"),
                                         "CREATE SOURCE t (id INT, name VARCHAR, price DOUBLE) "
                                         "WITH (connector = 'files', path = '{t}') FORMAT PLAIN ENCODE JSON;",
                                         "CREATE MATERIALIZED VIEW j AS SELECT l.k, l.v, t.name FROM l JOIN t ON l.k = t.id;"])),
    ("changing", "risingwave", "\n".join([_SOURCE.format(name="l", path="{l}"),
                                          "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR, price DOUBLE) "
                                          "WITH (connector = 'files', path = '{c}') FORMAT DEBEZIUM ENCODE JSON;",
                                          "CREATE MATERIALIZED VIEW j AS SELECT l.k, l.v, t.name FROM l JOIN t ON l.k = t.id;"])),
]


def write_inputs(root: Path, rows: int = 2000, keys: int = 50) -> dict[str, str]:
    """Small inputs of the programs: streams l and r (a row every 50 ms), a table t of the keys and
    the same table as Debezium change events (creates, an update, a delete)."""
    folders = {name: root / name for name in ("l", "r", "t", "c")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    for side, shift in (("l", 0), ("r", 7)):
        with (folders[side] / "part-0.json").open("w") as out:
            for i in range(rows):
                ms = i * 50 + shift
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(1704067200 + ms // 1000)) + f".{ms % 1000:03d}"
                out.write(json.dumps({"rowtime": stamp, "k": (i * 7 + shift) % keys, "v": i}) + "\n")
    table = [{"id": k, "name": f"n{k}", "price": k / 2} for k in range(keys)]
    (folders["t"] / "part-0.json").write_text("".join(json.dumps(row) + "\n" for row in table))
    changes = [{"op": "c", "before": None, "after": row} for row in table]
    changes += [{"op": "u", "before": table[1], "after": {**table[1], "price": 9.5}}, {"op": "d", "before": table[2], "after": None}]
    (folders["c"] / "part-0.json").write_text("".join(json.dumps(change) + "\n" for change in changes))
    return {name: str(folder) for name, folder in folders.items()}


def collect(work: Path) -> list[Path]:
    """Run every program with its driver listing the classes it loads; the lists."""
    inputs = write_inputs(work / "inputs")
    lists = []
    for name, dialect, text in PROGRAMS:
        program = work / f"{name}.sql"
        program.write_text(text.format(**inputs))
        class_list = work / f"{name}.classes"
        env = {**os.environ, "STREAMJOIN_CLASS_ARCHIVE": "off",
               "STREAMJOIN_DRIVER_JAVA_OPTIONS": f"{BOUNDED_JAVA_OPTIONS} -XX:DumpLoadedClassList={class_list}"}
        command = [sys.executable, "-m", "streamjoin.cli", "run", str(program), "--until-idle",
                   "--checkpoint", str(work / f"{name}.checkpoint"), *(["--dialect", dialect] if dialect else [])]
        started = time.monotonic()
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0 or not class_list.is_file():
            raise RuntimeError(f"warm-up program {name} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        print(f"streamjoin warm-up: {name}: {time.monotonic() - started:.1f} s", flush=True)
        lists.append(class_list)
    return lists


def build(path: Path, settings: Settings) -> None:
    with tempfile.TemporaryDirectory(prefix="streamjoin-warmup-") as tmp:
        work = Path(tmp)
        lists = collect(work)
        merged = work / "all.classes"
        count = class_archive.merge_class_lists(lists, merged)
        started = time.monotonic()
        class_archive.dump(merged, path, settings)
        print(f"streamjoin warm-up: the archive of {count} classes: {path} ({path.stat().st_size / 2**20:.0f} MB, "
              f"{time.monotonic() - started:.1f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streamjoin.warmup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build the archive even if a current one is there")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    path = class_archive.archive_path(settings)
    if path is None:
        print("streamjoin warm-up: STREAMJOIN_CLASS_ARCHIVE=off: no class archive", flush=True)
        return 0
    if not args.force and class_archive.current(path):
        return 0
    print("streamjoin warm-up: building the driver's class archive (about two minutes, once)", flush=True)
    build(path, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
