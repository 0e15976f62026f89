"""The hourly city sales report of one hour: the cities, a chart of sales by region, the quality verdict.

    report = build_report(app.config, "2024-01-01T10", frame, verdict)
    publish(report, "s3://bucket/reports/hourly_city_sales/hour=2024-01-01T10")   # -> the paths written

`publish` writes `cities.csv` (one row per city), `sales_by_region.png` (a bar chart of the total
sales per region), `input_trend.png` when earlier hours were complete (the hour's input and silent
share beside those of the hours before it, as the quality gate compared them), `quality.json`
(the hour's verdict) and, last, `index.html` (the cities table,
the chart, the verdict with each failed expectation; self-contained: the chart and the CSV are
inside the page, so it opens whole from a presigned URL or a copied file). The report says VALIDATED only when the
verdict passed; otherwise NOT VALIDATED (docs/quality.md: a failed hour keeps its data, and whoever
publishes it says so). Columns and chart come from the `[report]` section of the app's `app.toml`.
No Airflow, no Spark; matplotlib draws without a display (its Agg canvas).
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import numbers
from dataclasses import dataclass, field

from streamjoin.io.storage import s3

COLUMNS = ["city", "region", "store_name", "total_sales", "sales"]
VALIDATED = "VALIDATED"
NOT_VALIDATED = "NOT VALIDATED: failed quality checks"
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "png": "image/png", "json": "application/json",
                 "html": "text/html; charset=utf-8"}


@dataclass
class Report:
    app: str
    hour: str
    columns: list[str]
    rows: list[dict]  # one per city, sorted by the first column; NULL as None
    chart_by: str
    chart_measure: str
    totals: dict[str, object]  # chart_by value -> chart_measure summed (NULLs left out)
    verdict: dict  # the hour's verdict (verdict.json); {} when the hour was never checked
    # (label, input volume, silent share) of the hours before it, oldest first, then of this hour
    trend: list[tuple[str, float, float]] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # filled by render()

    @property
    def validated(self) -> bool:
        return self.verdict.get("status") == "passed"

    @property
    def status(self) -> str:
        if self.validated:
            return VALIDATED
        return NOT_VALIDATED if self.verdict else "NOT VALIDATED: not checked"


def build_report(app_config, hour: str, frame, verdict) -> Report:
    """The report of `hour`: `app_config` is the app's config (app.toml as a dict, or an object
    with `.config`), `frame` the hour's rows (a pandas DataFrame or an Arrow table), `verdict` the
    hour's quality verdict (a `streamjoin.quality.Verdict`, verdict.json's dict, or None)."""
    config = getattr(app_config, "config", app_config)
    settings = config.get("report", {})
    columns = list(settings.get("columns", COLUMNS))
    chart_by, measure = settings.get("chart_by", "region"), settings.get("chart_measure", "total_sales")
    rows = sorted(_records(frame), key=lambda r: (r.get(columns[0]) is None, str(r.get(columns[0]))))
    totals: dict[str, object] = {}
    for row in rows:
        group = "(none)" if row.get(chart_by) is None else str(row[chart_by])
        totals[group] = totals.get(group, 0) + (row.get(measure) or 0)
    verdict = verdict.to_json() if hasattr(verdict, "to_json") else dict(verdict or {})
    return Report(app=config["name"], hour=hour, columns=columns, rows=[{c: r.get(c) for c in columns} for r in rows],
                  chart_by=chart_by, chart_measure=measure, totals=dict(sorted(totals.items())), verdict=verdict,
                  trend=_trend(rows, config.get("quality", {}).get("volume_measure"), verdict.get("trailing") or {}))


def _trend(rows: list[dict], measure: str | None, trailing: dict) -> list[tuple[str, float, float]]:
    """The input trend the chart shows: the trailing hours (as the verdict recorded them), then this one."""
    volumes, silent = trailing.get("volumes") or [], trailing.get("silent_shares") or []
    if not measure or not volumes:
        return []
    before = [(f"-{n + 1}h", float(v), float(silent[n]) if n < len(silent) else math.nan) for n, v in enumerate(volumes)]
    here = (float(sum(r.get(measure) or 0 for r in rows)), sum(r.get(measure) is None for r in rows) / max(len(rows), 1))
    return [*reversed(before), ("this hour", *here)]


def publish(report: Report, dest: str) -> list[str]:
    """Write the report under `dest` (an s3:// prefix or a folder), index.html last; returns the
    paths written, in that order. On S3 each object gets its Content-Type (viewable in a browser)."""
    render(report)
    put = _writer(dest)
    written = []
    for name, data in report.files.items():
        path = s3.join(dest, name)
        put(path, data, CONTENT_TYPES[name.rsplit(".", 1)[1]])
        written.append(path)
    return written


def render(report: Report) -> dict[str, bytes]:
    """The report's files (name -> bytes), in the order they are published."""
    table, chart = cities_csv(report), chart_png(report)
    trend = trend_png(report) if report.trend else None
    report.files = {
        "cities.csv": table,
        "sales_by_region.png": chart,
        **({"input_trend.png": trend} if trend else {}),
        "quality.json": (json.dumps(report.verdict, indent=2, sort_keys=True, default=str) + "\n").encode(),
        "index.html": index_html(report, chart, table, trend).encode(),
    }
    return report.files


def trend_png(report: Report) -> bytes:
    """The hour's input (bars) and silent share (a line) beside the hours before it."""
    from matplotlib.figure import Figure

    labels = [t[0] for t in report.trend]
    figure = Figure(figsize=(8, 3.5), layout="constrained")
    axes = figure.subplots()
    axes.bar(labels, [t[1] for t in report.trend], color=["#9aa9c7"] * (len(labels) - 1) + ["#4c72b0"])
    axes.set_ylabel("input (volume measure summed)")
    share = axes.twinx()
    share.plot(labels, [t[2] for t in report.trend], color="#c44e52", marker="o")
    share.set_ylabel("silent share", color="#c44e52")
    share.set_ylim(0, 1)
    axes.set_title(f"{report.app} {report.hour}: input and silent share, this hour and the hours before")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def cities_csv(report: Report) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(report.columns)
    writer.writerows([_text(row[c]) for c in report.columns] for row in report.rows)
    return out.getvalue().encode()


def chart_png(report: Report) -> bytes:
    """A bar chart of `chart_measure` per `chart_by` (a Figure on the Agg canvas: no display, no pyplot)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.subplots()
    labels = list(report.totals)
    axes.bar(labels, [float(v) for v in report.totals.values()], color="#4c72b0")
    axes.set_title(f"{report.app} {report.hour}: {report.chart_measure} by {report.chart_by} ({report.status})")
    axes.set_xlabel(report.chart_by)
    axes.set_ylabel(report.chart_measure)
    axes.tick_params(axis="x", labelrotation=30 if len(labels) > 8 else 0)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def index_html(report: Report, chart: bytes, table: bytes, trend: bytes | None = None) -> str:
    """The page, self-contained: the chart and the CSV are inside it (data: URLs), so it shows whole
    wherever it is opened (a presigned URL, a copied file, a mail attachment)."""
    e = html.escape
    chart_url = "data:image/png;base64," + base64.b64encode(chart).decode()
    table_url = "data:text/csv;charset=utf-8;base64," + base64.b64encode(table).decode()
    head = "".join(f"<th>{e(c)}</th>" for c in report.columns)
    body = "\n".join('<tr class="city">' + "".join(_cell(row[c]) for c in report.columns) + "</tr>" for row in report.rows)
    banner = "validated" if report.validated else "not-validated"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(report.app)} hour {e(report.hour)}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:2px 8px}}
td.num{{text-align:right}} .null{{color:#999}} .validated{{background:#d4edda;padding:8px}} .not-validated{{background:#f8d7da;padding:8px}}</style>
</head><body>
<h1>{e(report.app)}: hour {e(report.hour)}</h1>
<p class="{banner}" id="status"><strong>{e(report.status)}</strong></p>
{_verdict_html(report.verdict)}
{_trend_html(report, trend)}
<h2>{e(report.chart_measure)} by {e(report.chart_by)}</h2>
<p><img id="chart" src="{chart_url}" alt="{e(report.chart_measure)} by {e(report.chart_by)}"></p>
<h2>Cities ({len(report.rows)})</h2>
<p><a href="{table_url}" download="cities.csv">cities.csv</a></p>
<table id="cities"><thead><tr>{head}</tr></thead><tbody>
{body}
</tbody></table>
</body></html>
"""


def _verdict_html(verdict: dict) -> str:
    e = html.escape
    if not verdict:
        return "<h2>Quality</h2><p>This hour was never checked.</p>"
    failed = verdict.get("failed") or []
    total = verdict.get("expectations", 0)
    lines = ['<h2>Quality</h2><p id="verdict">'
             f"Verdict: <strong>{e(str(verdict.get('status', '')).upper())}</strong>, "
             f"{total - len(failed)} of {total} expectations met; {verdict.get('rows')} rows, "
             f"{verdict.get('expected_rows')} expected"
             + (f"; {verdict['late_rows']} late rows of the hour set aside" if verdict.get("late_rows") is not None else "")
             + f". Checked at {e(str(verdict.get('checked_at', '')))}. "
             f'<a href="quality.json">quality.json</a></p>']
    if failed:
        lines.append('<table id="failed"><thead><tr><th>check</th><th>expectation</th><th>column</th><th>expected</th>'
                     "<th>observed</th><th>offending rows</th></tr></thead><tbody>")
        for f in failed:
            offending = "<br>".join(e(json.dumps(r, default=str)) for r in f.get("offending_rows") or [])
            lines.append(f'<tr class="failed"><td>{e(f.get("check", ""))}</td><td>{e(f.get("expectation", ""))}</td>'
                         f'<td>{e(f.get("column") or "")}</td><td>{e(f.get("expected", ""))}</td>'
                         f'<td>{e(f.get("observed", ""))}</td><td>{offending}</td></tr>')
        lines.append("</tbody></table>")
    lines += [f'<p class="note">Not checked: {e(note)}</p>' for note in verdict.get("notes") or []]
    for label, key in (("Verdict", "verdict"), ("Data Docs", "docs_page")):
        if verdict.get(key):
            lines.append(f"<p>{label}: <code>{e(verdict[key])}</code></p>")
    return "\n".join(lines)


def _records(frame) -> list[dict]:
    """Rows as dicts with NULL as None, from an Arrow table or a pandas DataFrame."""
    if hasattr(frame, "to_pylist"):
        return frame.to_pylist()
    frame = frame.convert_dtypes()  # integers with NULLs stay integers
    return [{k: None if _missing(v) else v for k, v in row.items()} for row in frame.to_dict("records")]


def _missing(value) -> bool:
    import pandas as pd

    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _cell(value) -> str:
    if value is None:
        return '<td class="null">NULL</td>'
    kind = ' class="num"' if isinstance(value, numbers.Number) else ""
    return f"<td{kind}>{html.escape(_text(value))}</td>"


def _writer(dest: str):
    """put(path, bytes, content type)."""
    if not s3.is_s3(dest):
        return lambda path, data, kind: s3.write_bytes(path, data)
    client = s3.S3Settings.from_env().client()

    def put(path: str, data: bytes, kind: str) -> None:
        bucket, key = s3.split(path)
        client.put_object(Bucket=bucket, Key=key, Body=data, ContentType=kind)

    return put


def _trend_html(report: Report, trend: bytes | None) -> str:
    if not trend:
        return ""
    url = "data:image/png;base64," + base64.b64encode(trend).decode()
    cells = "".join(f"<tr><td>{html.escape(label)}</td><td class=\"num\">{volume:g}</td><td class=\"num\">{share:.0%}</td></tr>"
                    for label, volume, share in report.trend)
    return ('<h2>Input, this hour and the hours before</h2>'
            f'<p><img id="trend" src="{url}" alt="input and silent share by hour"></p>'
            f'<table id="trend-table"><thead><tr><th>hour</th><th>input</th><th>silent</th></tr></thead><tbody>{cells}'
            '</tbody></table>')
