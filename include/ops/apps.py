"""An app by name: its config and where its output, checkpoint and reports are (no Airflow, no Spark).

    from include.ops.apps import load_app
    app = load_app("hourly_city_sales")      # or the app's directory (holding app.toml)
    app.output, app.checkpoint, app.reports

Apps live in `include/apps/<name>/` of the repository root: `STREAMJOIN_HOME`, else the folder
holding `include/`. Relative paths in `app.toml` are relative to that root; `${NAME}` and
`${NAME:-default}` in them come from the environment. Cheap to import (a DAG file may call it
while it is parsed).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from streamjoin.env import expand
from streamjoin.io.storage import s3

DEFAULT_REPORTS = "data/reports"


@dataclass(frozen=True)
class AppConfig:
    name: str
    dir: Path  # holds app.toml
    config: dict  # app.toml as read
    output: str  # the sink: OUTPUT_PATH, else [paths] output; an s3:// prefix or an absolute folder
    checkpoint: str | None  # [paths] checkpoint
    reports: str  # the reports root ([report] path); an app's reports go under <reports>/<name>/


def repo_root() -> Path:
    """`STREAMJOIN_HOME`, else the folder holding `include/`."""
    home = os.environ.get("STREAMJOIN_HOME")
    return Path(home).resolve() if home else Path(__file__).resolve().parents[2]


def load_app(name_or_dir: str | Path) -> AppConfig:
    """The app named `name_or_dir` under `include/apps/`, or the app in that directory."""
    root = repo_root()
    given = Path(name_or_dir)
    app_dir = given if (given / "app.toml").is_file() else root / "include" / "apps" / str(name_or_dir)
    if not (app_dir / "app.toml").is_file():
        raise LookupError(f"no app '{name_or_dir}': give an app directory (holding app.toml) or a name under {root}/include/apps/")
    config = tomllib.loads((app_dir / "app.toml").read_text())
    paths = config.get("paths", {})
    output = os.environ.get(f"{config.get('env_prefix', '')}OUTPUT_PATH") or paths.get("output")
    if not output:
        raise LookupError(f"{app_dir / 'app.toml'} has no [paths] output and OUTPUT_PATH is not set")
    checkpoint = paths.get("checkpoint")
    return AppConfig(
        name=config.get("name", app_dir.name), dir=app_dir.resolve(), config=config, output=resolve_path(output, root),
        checkpoint=resolve_path(checkpoint, root) if checkpoint else None,
        reports=resolve_path(config.get("report", {}).get("path", DEFAULT_REPORTS), root),
    )


def resolve_path(path: str, root: Path) -> str:
    """`${VAR}` expanded; an s3:// prefix as is (normalized), a relative folder under `root`."""
    path = expand(path)
    if s3.is_s3(path):
        return s3.normalize(path)
    return str(Path(path) if Path(path).is_absolute() else root / path)
