"""Run the hourly city sales app end to end on local files (what `make demo` does).

Generates the city table (`<root>/city_info`) and a few hours of sales (`<root>/incoming`),
then plays the sales into the stream's folder (`<root>/sales`) an hour at a time (as a producer would), processing after each hour; the late rows come
last. At the end every clock goes to +infinity (end of input) so the last hour closes too.
Returns the output rows, the query status and the generated data (for checking).
"""

from __future__ import annotations

import collections
import os
import shutil
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from generate import Generated, generate  # noqa: E402

CONFIG = tomllib.loads((HERE / "app.toml").read_text())


def run_app(spark, root: Path, report=print, output: str | None = None, snapshots: str | None = None,
            **generator) -> tuple[list[dict], dict, Generated]:
    """Returns (the committed output rows of every complete hour, the final status, the data).
    `output` is the sink and `snapshots` the city table's snapshot root: folders (default under
    `root`) or s3:// prefixes."""
    from streamjoin.runtime.app import App, take_snapshots
    from streamjoin.runtime.pipeline import Pipeline

    shutil.rmtree(root, ignore_errors=True)
    g = generate(root / "incoming", write_late=True, **generator)
    shutil.move(root / "incoming" / "city_info", root / "city_info")
    sales, checkpoint, late = root / "sales", root / "checkpoint", root / "late"
    output = output or str(root / "output")
    sales.mkdir(parents=True)
    os.environ["SALES_PATH"] = str(sales)
    os.environ["CITY_INFO_PATH"] = str(root / "city_info")
    os.environ["OUTPUT_PATH"] = output
    os.environ["CITY_INFO_SNAPSHOTS_PATH"] = snapshots or str(root / "snapshots" / "city_info")
    take_snapshots(App.load(HERE))  # the city table's first version, which the query loads
    pipeline = Pipeline.from_file(HERE / CONFIG["query"])
    runner = pipeline.runner(spark, checkpoint, str(late), late_root=late, name=CONFIG["name"])
    shown: set[str] = set()
    try:
        runner.start()
        for hour_files in _by_hour(g.files):
            for f in hour_files:
                shutil.copy(f, sales / f".{f.name}")
                os.replace(sales / f".{f.name}", sales / f.name)
            runner.process_available()
            shown |= _report(read_rows(output), shown, report)
        runner.end_of_input()
        shown |= _report(read_rows(output), shown, report)
    except Exception as error:
        runner.fail(error)
        raise
    status = runner.stop("finished")
    return read_rows(output), status, g


def read_rows(output: str) -> list[dict]:
    """The committed rows of every complete hour (a completeness marker exists), hour by hour,
    as JSON-ready values (timestamps `YYYY-MM-DD HH:MM:SS.fff`, NULL as None)."""
    from streamjoin.io.formats.jsonlines import format_value
    from streamjoin.io.sinks.hours import complete_hours, read_hour_arrow

    rows = []
    for hour in complete_hours(output):
        table = read_hour_arrow(output, hour).sort_by([("city", "ascending")])
        rows.extend({k: format_value(v) for k, v in r.items()} for r in table.to_pylist())
    return rows


def summary(rows: list[dict]) -> dict[str, tuple[int, list[str]]]:
    """hour -> (rows, cities without sales)."""
    hours: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        hours[r["sales_hour"]].append(r)
    return {h: (len(rs), sorted(r["city"] for r in rs if r["total_sales"] is None)) for h, rs in sorted(hours.items())}


def _report(rows: list[dict], shown: set[str], report) -> set[str]:
    new = set()
    for hour, (count, silent) in summary(rows).items():
        if hour in shown:
            continue
        names = ", ".join(silent[:6]) + (f", ... ({len(silent)} in all)" if len(silent) > 6 else "")
        report(f"hour {hour}: {count} rows; no sales in {len(silent)} cities: {names or '-'}")
        new.add(hour)
    return new


def _by_hour(files: list[Path]) -> list[list[Path]]:
    """Sales files grouped six to an hour (ten minutes each); the late file on its own."""
    groups: list[list[Path]] = []
    for f in files:
        if "late" in f.name or not groups or len(groups[-1]) == 6 or "late" in groups[-1][-1].name:
            groups.append([f])
        else:
            groups[-1].append(f)
    return groups
