"""`streamjoin report APP --hour H`: where an hour's report and Data Docs are, as local files.

The report (`<reports>/<app>/hour=H/index.html`, published by `hourly_enrichment_report`) and
the Data Docs of the hour's quality check (`<output>/_quality/hour=H/docs/`) usually live on S3.
A browser cannot open an s3:// URL, so this copies both to a local folder (`data/reports-local/`
of the repository unless `--to DIR`) and prints the files to open; local ones are printed as
they are. `--open` also opens the report in the default browser.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from streamjoin.env import expand
from streamjoin.io.sinks import hours
from streamjoin.io.sinks.table_sink import HOUR
from streamjoin.io.storage import s3
from streamjoin.quality import app_repo_root, find_app, output_path

DEFAULT_REPORTS = "data/reports"  # [report] path when app.toml says nothing (include/ops/apps.py)
LOCAL_COPIES = "data/reports-local"


class ReportMissing(LookupError):
    """The hour has no published report."""


@dataclass(frozen=True)
class HourReport:
    report: str  # where it is published: <reports>/<app>/hour=H (s3:// or a folder)
    docs: str  # the quality check's Data Docs site: <output>/_quality/hour=H/docs
    local_report: Path  # index.html to open
    local_docs: Path | None  # the Data Docs' index.html to open (None: the hour was not checked)


def locate(app: str | Path, hour: str, output: str | None = None) -> tuple[str, str, str]:
    """(app name, the report's folder, the Data Docs' folder) of one hour."""
    app_dir = find_app(app)
    config = tomllib.loads((app_dir / "app.toml").read_text())
    root = app_repo_root(app_dir)
    hour = hours.normalize_hour(hour)
    reports = expand(config.get("report", {}).get("path", DEFAULT_REPORTS))
    if not (s3.is_s3(reports) or Path(reports).is_absolute()):
        reports = str(root / reports)
    name = config.get("name", app_dir.name)
    docs = s3.join(output_path(config, root, output), "_quality", f"{HOUR}={hour}", "docs")
    return name, s3.join(reports, name, f"{HOUR}={hour}"), docs


def fetch(app: str | Path, hour: str, to: str | os.PathLike | None = None, output: str | None = None,
          settings: s3.S3Settings | None = None) -> HourReport:
    """The hour's report and Data Docs as local files (copied from S3 into `to`/<app>/hour=H/)."""
    name, report, docs = locate(app, hour, output)
    settings = settings or (s3.S3Settings.from_env() if s3.is_s3(report) or s3.is_s3(docs) else None)
    if s3.read_bytes(s3.join(report, "index.html"), settings) is None:
        raise ReportMissing(f"no report for hour {hours.normalize_hour(hour)} of {name} at {report}/index.html: "
                            "trigger hourly_enrichment_report for that hour (it checks the hour and publishes it)")
    target = Path(to or app_repo_root(find_app(app)) / LOCAL_COPIES) / name / f"{HOUR}={hours.normalize_hour(hour)}"
    local_report = _local(report, target, settings)
    local_docs = _local(docs, target / "data-docs", settings)
    docs_page = local_docs / "index.html" if local_docs is not None and (local_docs / "index.html").is_file() else None
    return HourReport(report, docs, local_report / "index.html", docs_page)


def _local(folder: str, target: Path, settings) -> Path | None:
    """`folder` itself when it is local, else a copy of its files under `target`."""
    if not s3.is_s3(folder):
        return Path(folder) if Path(folder).is_dir() else None
    files = s3.list_files(folder, settings, recursive=True)
    if not files:
        return None
    for path in files:
        local = target / path[len(folder) + 1:]
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(s3.read_bytes(path, settings) or b"")
    return target
