"""The data quality gate of an app's hourly output, without Airflow (`streamjoin quality check`).

    from streamjoin.quality import check_hour
    verdict = check_hour("include/apps/hourly_city_sales", "2024-01-01T10")
    verdict.passed, verdict.failed, verdict.docs

For one complete hour H: read the hour's completeness marker and committed rows (pandas),
build the app's suite (`include/quality/<suite>.py`, thresholds from the `[quality]` section of
its `app.toml`), validate it with an ephemeral Great Expectations context, then write under
`<output>/_quality/hour=H/`: `result.json` (the validation result), `docs/` (the Data Docs site)
and, last, `verdict.json` (`status` passed | failed). A failed hour keeps its data; its alert goes
out by e-mail and webhook (`streamjoin.alerts`). docs/quality.md has the details.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import logging
import mimetypes
import os
import re
import shutil
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from streamjoin import data_docs
from streamjoin.io.sinks import hours
from streamjoin.io.sinks.table_sink import HOUR
from streamjoin.io.storage import s3
from streamjoin.quality_inputs import late_rows_of_hour, trailing_volumes

log = logging.getLogger("streamjoin.quality")
REPO_ROOT = Path(__file__).resolve().parents[2]
PASSED, FAILED = "passed", "failed"


@dataclass
class FailedExpectation:
    check: str  # the suite's name for what is checked (meta["check"]): row_count, key_unique, ...
    expectation: str  # the Great Expectations type, e.g. expect_column_values_to_be_unique
    column: str | None
    expected: str
    observed: str
    offending_rows: list[dict] = field(default_factory=list)


@dataclass
class Verdict:
    app: str
    hour: str
    status: str  # passed | failed
    output: str
    rows: int  # the hour's committed rows, as read
    expected_rows: int  # the rows of the snapshot the hour was joined with
    expectations: int
    failed: list[FailedExpectation]
    result: str  # the validation result JSON
    docs: str  # the Data Docs site's index.html
    docs_page: str  # its page for this validation
    verdict: str  # where this verdict is
    checked_at: str
    notes: list[str] = field(default_factory=list)  # what was not checked, and why
    # the hour's rows in the app's late-rows output when it was checked (None: not counted)
    late_rows: int | None = None
    # the complete hours before it (newest first): their input volumes and silent shares (the report's trend)
    trailing: dict = field(default_factory=dict)
    alerts: dict[str, str] = field(default_factory=dict)  # channel -> outcome (not in verdict.json)

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "alerts"}

    def summary(self) -> str:
        """What the command prints: the verdict, each failure, where the results are."""
        lines = [f"{self.app} hour {self.hour}: {self.status.upper()} "
                 f"({self.expectations - len(self.failed)} of {self.expectations} expectations met; "
                 f"{self.rows} rows, {self.expected_rows} expected)"]
        if self.late_rows is not None:
            lines.append(f"late rows of the hour (set aside by the app, so far): {self.late_rows}")
        lines += _failure_lines(self.failed, rows=False)
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"result:  {self.result}", f"docs:    {self.docs}", f"verdict: {self.verdict}"]
        return "\n".join(lines) + "\n"

    def alert(self) -> tuple[str, str]:
        """(subject, text) of the alert for a failed hour."""
        subject = (f"[streamjoin] {self.app} hour {self.hour} failed its quality check: "
                   f"{len(self.failed)} of {self.expectations} expectations failed")
        lines = [f"The quality gate failed for app {self.app}, hour {self.hour} (output {self.output}).",
                 f"The hour's data is kept; it is marked failed in {self.verdict}.",
                 "", f"Failed expectations ({len(self.failed)} of {self.expectations}):"]
        lines += _failure_lines(self.failed, rows=True)
        lines += ["", f"Validation result: {self.result}", f"Data Docs: {self.docs_page}"]
        return subject, "\n".join(lines) + "\n"


class QualityConfigError(ValueError):
    """The app or its `[quality]` section cannot be used."""


def check_hour(app: str | Path, hour: str, output: str | None = None, alert: bool = True,
               settings: s3.S3Settings | None = None) -> Verdict:
    """Validate one complete hour of an app's output, write the results, alert on failure.

    `app` is an app directory (holding `app.toml`) or an app name under `include/apps/`;
    `output` overrides the output path (else `OUTPUT_PATH`, else the config's `[paths] output`).
    Raises `HourNotComplete` when the hour has no completeness marker yet."""
    app_dir = find_app(app)
    config = tomllib.loads((app_dir / "app.toml").read_text())
    if "quality" not in config:
        raise QualityConfigError(f"{app_dir / 'app.toml'} has no [quality] section")
    root = app_repo_root(app_dir)
    output = output_path(config, root, output)
    settings = settings or s3.S3Settings.from_env()
    hour = hours.normalize_hour(hour)
    mark = hours.marker(output, hour, settings)
    if mark is None:
        raise hours.HourNotComplete(f"hour {hour} of {output} is not complete yet (no completeness marker): nothing to check")
    expected_rows = snapshot_rows(mark, config["quality"].get("snapshot"))
    reference, note = snapshot_table(mark, config["quality"].get("snapshot"), settings)
    table = hours.read_hour_arrow(output, hour, settings)
    silent: list[float] = []
    trailing = trailing_volumes(output, hour, config["quality"], settings, silent)
    late = late_rows_of_hour(config, root, hour, QualityConfigError)
    quiet_library_logs()
    suite_module = load_suite_module(root, config["quality"].get("suite", config["name"]))
    docs_dir = Path(tempfile.mkdtemp(prefix="streamjoin-quality-docs-"))
    try:
        result = validate(table, config, suite_module, expected_rows, hour, docs_dir, reference, trailing, late, silent)
        still_remote = data_docs.localize(docs_dir)  # pages that open offline: their assets beside them
        if still_remote:
            log.warning("Data Docs pages still load from the network (GX's templates changed?): %s", ", ".join(still_remote))
        verdict = _verdict(config["name"], hour, output, table, expected_rows, result, docs_dir,
                           int(config["quality"].get("sample_rows", 5)))
        verdict.notes = [note] if note else []
        verdict.late_rows = late
        verdict.trailing = {"volumes": trailing, "silent_shares": [round(x, 4) for x in silent]}
        publish(verdict, result, docs_dir, settings)
    finally:
        shutil.rmtree(docs_dir, ignore_errors=True)
    if not verdict.passed and alert:
        from streamjoin import alerts

        verdict.alerts = alerts.deliver(*verdict.alert())
    return verdict


def quiet_library_logs() -> None:
    """Great Expectations logs about 200 INFO lines as it is imported ("Skipping registering
    function ..."), which buried the verdict in a task's log: keep its warnings and errors only,
    unless its level has been set already (someone wants its details)."""
    gx_log = logging.getLogger("great_expectations")
    if gx_log.level == logging.NOTSET:
        gx_log.setLevel(logging.WARNING)


def read_verdict(output: str, hour: str, settings: s3.S3Settings | None = None) -> dict | None:
    """An hour's verdict (`{"status": "passed" | "failed", ...}`), or None when never checked.
    A report is published as validated only when this says passed."""
    return s3.read_json(_quality_dir(output, hours.normalize_hour(hour)) + "/verdict.json", settings)


def find_app(app: str | Path) -> Path:
    """An app directory as given, or an app name under `include/apps/` (of the working directory,
    then of this repository)."""
    candidates = [Path(app), Path.cwd() / "include" / "apps" / str(app), REPO_ROOT / "include" / "apps" / str(app)]
    for candidate in candidates:
        if (candidate / "app.toml").is_file():
            return candidate.resolve()
    raise QualityConfigError(f"no app '{app}': give an app directory (holding app.toml) or a name under include/apps/")


def output_path(config: dict, root: Path, output: str | None = None) -> str:
    """The app's output: `output` if given, else `OUTPUT_PATH` (after the app's `env_prefix`), else
    `[paths] output` (a relative
    folder is relative to the repository root)."""
    path = output or os.environ.get(f"{config.get('env_prefix', '')}OUTPUT_PATH") or config.get("paths", {}).get("output")
    if not path:
        raise QualityConfigError("no output path: pass --output, set OUTPUT_PATH or set [paths] output in app.toml")
    return s3.normalize(path) if s3.is_s3(path) or Path(path).is_absolute() else str(root / path)


def snapshot_rows(mark: dict, alias: str | None) -> int:
    """The rows of the snapshot the hour was joined with: the one named `alias` (the
    table-preserving input), or the only one."""
    return int(_snapshot_entry(mark, alias)["rows"])


_EXPORTED = re.compile(r"^s3 (?P<root>.+) version (?P<version>\d+)$")  # io/sources/tables.py: an exported snapshot's source


def snapshot_table(mark: dict, alias: str | None, settings: s3.S3Settings | None = None):
    """(the rows of the snapshot the hour was joined with, None), when that snapshot is an exported,
    immutable version (`streamjoin snapshot`; the table's connector 's3'); else (None, why not):
    a table read from files or PostgreSQL may have changed since the hour was joined."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamjoin.io.sources import snapshots

    entry = _snapshot_entry(mark, alias)
    exported = _EXPORTED.match(str(entry.get("source", "")))
    if not exported:
        return None, (f"key set and attributes not compared with the snapshot: {entry.get('alias')} was read from "
                      f"{entry.get('source')}, not an exported snapshot version, so what it held then is unknown")
    path = s3.join(snapshots.version_path(exported["root"], int(exported["version"])), snapshots.DATA)
    data = s3.read_bytes(path, settings)
    if data is None:
        raise QualityConfigError(f"hour {mark.get('hour')} was joined with snapshot {path}, which is gone: "
                                 "cannot compare the hour's keys with it")
    return pq.read_table(pa.BufferReader(data)), None


def _snapshot_entry(mark: dict, alias: str | None) -> dict:
    snapshots = mark.get("snapshots") or []
    chosen = [s for s in snapshots if alias and s.get("alias") == alias]
    if not chosen and len(snapshots) == 1:
        chosen = snapshots
    if len(chosen) != 1:
        names = ", ".join(str(s.get("alias")) for s in snapshots) or "none"
        raise QualityConfigError(f"hour {mark.get('hour')}: cannot tell which snapshot the hour was joined with "
                                 f"([quality] snapshot = {alias!r}; the marker's snapshots: {names})")
    return chosen[0]


def load_suite_module(root: Path, suite: str):
    """`include/quality/<suite>.py`, imported by path (`include/` is not a package)."""
    path = root / "include" / "quality" / f"{suite}.py"
    if not path.is_file():
        raise QualityConfigError(f"no quality suite {path}")
    spec = importlib.util.spec_from_file_location(f"streamjoin_quality_suite_{suite}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate(table, config: dict, suite_module, expected_rows: int, hour: str, docs_dir: Path,
             reference=None, trailing: list[float] | None = None, late: int | None = None,
             silent: list[float] | None = None) -> dict:
    """Run the suite on the hour's rows in an ephemeral context (pandas data source), building
    the Data Docs site in the local folder `docs_dir`; returns the validation result as JSON.
    `reference`: the rows of the snapshot the hour was joined with (None: unknown); `trailing`:
    the input volumes of the complete hours before it (`trailing_volumes`)."""
    import inspect

    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    context = gx.get_context(mode="ephemeral", project_config=DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
        data_docs_sites={"local": {
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        }},
    ))
    batch = (context.data_sources.add_pandas("output").add_dataframe_asset(config["name"])
             .add_batch_definition_whole_dataframe(f"hour {hour}"))
    accepts = inspect.signature(suite_module.build_suite).parameters
    if "silent" in accepts:
        suite = suite_module.build_suite(context, config, expected_rows, hour, reference, trailing=trailing or [], late=late,
                                         silent=silent or [])
    elif "late" in accepts:  # a suite written before the silent-share check
        suite = suite_module.build_suite(context, config, expected_rows, hour, reference, trailing=trailing or [], late=late)
    elif "trailing" in accepts:  # a suite written before the late-share check
        suite = suite_module.build_suite(context, config, expected_rows, hour, reference, trailing=trailing or [])
    else:  # a suite written before the volume check
        suite = suite_module.build_suite(context, config, expected_rows, hour, reference)
    definition = context.validation_definitions.add(gx.ValidationDefinition(name=f"{config['name']} {hour}", data=batch, suite=suite))
    checkpoint = context.checkpoints.add(gx.Checkpoint(
        name=f"{config['name']} quality", validation_definitions=[definition],
        actions=[gx.checkpoint.UpdateDataDocsAction(name="data docs", site_names=["local"])],
        result_format={"result_format": "SUMMARY"},  # counts and the first 20 unexpected rows' indexes, not all
    ))
    outcome = checkpoint.run(batch_parameters={"dataframe": table.to_pandas()},
                             run_id=RunIdentifier(run_name=hour, run_time=dt.datetime.now(dt.UTC)))  # else GX takes the hour for the run time
    (result,) = outcome.run_results.values()
    return result.to_json_dict()


def publish(verdict: Verdict, result: dict, docs_dir: Path, settings: s3.S3Settings) -> None:
    """result.json, then the Data Docs files, then verdict.json (the hour's mark) last."""
    put = _uploader(verdict.output, settings)
    put(verdict.result, (json.dumps(result, indent=2, sort_keys=True) + "\n").encode())
    base = verdict.docs.rsplit("/", 1)[0]
    for file in sorted(p for p in docs_dir.rglob("*") if p.is_file()):
        put(f"{base}/{file.relative_to(docs_dir).as_posix()}", file.read_bytes())
    put(verdict.verdict, (json.dumps(verdict.to_json(), indent=2, sort_keys=True) + "\n").encode())
    log.info("%s hour %s %s; verdict %s", verdict.app, verdict.hour, verdict.status, verdict.verdict)


def _uploader(output: str, settings: s3.S3Settings):
    """put(path, bytes): on S3 with a Content-Type, so the Data Docs pages open in a browser."""
    if not s3.is_s3(output):
        return lambda path, data: s3.write_bytes(path, data)
    client = settings.client()

    def put(path: str, data: bytes) -> None:
        bucket, key = s3.split(path)
        kind = mimetypes.guess_type(key)[0] or "application/octet-stream"
        client.put_object(Bucket=bucket, Key=key, Body=data, ContentType=kind)

    return put


def _verdict(app: str, hour: str, output: str, table, expected_rows: int, result: dict, docs_dir: Path,
             sample_rows: int) -> Verdict:
    where = _quality_dir(output, hour)
    (page,) = [p.relative_to(docs_dir).as_posix() for p in docs_dir.glob("validations/**/*.html")]
    failed = [_failure(r, table, sample_rows) for r in result["results"] if not r["success"]]
    return Verdict(
        app=app, hour=hour, status=PASSED if result["success"] else FAILED, output=output, rows=table.num_rows,
        expected_rows=expected_rows, expectations=len(result["results"]), failed=failed,
        result=f"{where}/result.json", docs=f"{where}/docs/index.html", docs_page=f"{where}/docs/{page}",
        verdict=f"{where}/verdict.json", checked_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )


def _quality_dir(output: str, hour: str) -> str:
    return s3.join(output, "_quality", f"{HOUR}={hour}")


def _failure(entry: dict, table, sample_rows: int) -> FailedExpectation:
    config = entry["expectation_config"]
    kwargs, outcome = config.get("kwargs", {}), entry.get("result") or {}
    indexes = [i for i in outcome.get("partial_unexpected_index_list") or [] if isinstance(i, int)][:sample_rows]
    return FailedExpectation(
        check=(config.get("meta") or {}).get("check", config["type"]),
        expectation=config["type"],
        column=kwargs.get("column") or ", ".join(c for c in (kwargs.get("column_A"), kwargs.get("column_B")) if c) or None,
        expected=_expected(config["type"], kwargs, config.get("meta")),
        observed=_observed(config["type"], entry),
        offending_rows=_rows(table, indexes),
    )


def _expected(kind: str, kwargs: dict, meta: dict | None = None) -> str:
    mostly = kwargs.get("mostly")
    if kind == "expect_table_row_count_to_equal":
        return f"exactly {kwargs['value']} rows"
    if kind == "expect_column_values_to_not_be_null":
        return f"NULL in at most {1 - mostly:.0%} of the rows" if mostly is not None and mostly < 1 else "no NULL"
    if kind == "expect_column_values_to_be_unique":
        return "every value unique"
    if kind == "expect_column_values_to_be_in_set":
        return f"every value one of the snapshot's {len(kwargs['value_set'])} keys"
    if kind == "expect_column_distinct_values_to_contain_set":
        return f"every one of the snapshot's {len(kwargs['value_set'])} keys"
    if kind == "expect_column_pair_values_to_be_in_set":
        return f"each ({kwargs['column_A']}, {kwargs['column_B']}) as in the snapshot"
    if kind == "expect_column_sum_to_be_between" and (meta or {}).get("check") == "late_share":
        return (f"at most a share of {meta['max_late_share']:g} of the hour's input late: {meta['late_rows']} late rows "
                f"need a sum of at least {kwargs['min_value']:g} on time")
    if kind == "expect_column_sum_to_be_between":  # the input volume against the hours before it
        return f"a sum of at least {kwargs['min_value']:g} (a share of the trailing hours' median)"
    if kind == "expect_column_values_to_be_between":
        bounds = []
        if kwargs.get("min_value") is not None:
            bounds.append(f"{'>' if kwargs.get('strict_min') else '>='} {kwargs['min_value']}")
        if kwargs.get("max_value") is not None:
            bounds.append(f"{'<' if kwargs.get('strict_max') else '<='} {kwargs['max_value']}")
        return " and ".join(bounds)
    return json.dumps({k: v for k, v in kwargs.items() if k not in ("batch_id", "column")}, default=str)


def _observed(kind: str, entry: dict) -> str:
    errors = _errors(entry.get("exception_info") or {})
    if errors:
        return "error: " + "; ".join(errors)
    outcome = entry.get("result") or {}
    if kind == "expect_column_distinct_values_to_contain_set":
        missing = outcome.get("partial_missing_list") or []
        names = ", ".join(json.dumps(v, default=str) for v in missing[:20])
        return f"{outcome.get('missing_count', len(missing))} missing: {names}" + (", ..." if len(missing) > 20 else "")
    if "observed_value" in outcome:
        unit = " rows" if kind.startswith("expect_table_row_count") else ""
        if kind == "expect_column_sum_to_be_between":
            return f"{float(outcome['observed_value']):g} in total"
        return f"{outcome['observed_value']}{unit}"
    count, total = outcome.get("unexpected_count", 0), outcome.get("element_count", 0)
    if kind == "expect_column_values_to_not_be_null":
        return f"{count} of {total} rows NULL ({outcome.get('unexpected_percent') or 0:.1f}%)"
    values = ", ".join(json.dumps(v, default=str) for v in (outcome.get("partial_unexpected_list") or [])[:5])
    return f"{count} of {total} rows unexpected" + (f", e.g. {values}" if values else "")


def _errors(info: dict) -> list[str]:
    """The exception messages of a result: GX gives one {"raised_exception", "exception_message"}
    or, when metrics failed, one such dict per metric id."""
    if "exception_message" in info:
        return [info["exception_message"]] if info.get("raised_exception", True) and info["exception_message"] else []
    return sorted({m for v in info.values() if isinstance(v, dict) for m in _errors(v)})


def _rows(table, indexes: list[int]) -> list[dict]:
    from streamjoin.io.formats.jsonlines import format_value

    if not indexes:
        return []
    return [{k: format_value(v) for k, v in row.items()} for row in table.take(indexes).to_pylist()]


def _failure_lines(failed: list[FailedExpectation], rows: bool) -> list[str]:
    lines = []
    for f in failed:
        lines.append(f"- {f.check}: {f.expectation}" + (f" on {f.column}" if f.column else ""))
        lines += [f"    expected: {f.expected}", f"    observed: {f.observed}"]
        if rows and f.offending_rows:
            lines.append("    offending rows:")
            lines += [f"      {json.dumps(r, default=str)}" for r in f.offending_rows]
    return lines


def app_repo_root(app_dir: Path) -> Path:
    """The folder holding `include/` (paths in app.toml are relative to it)."""
    for parent in app_dir.parents:
        if parent.name == "include":
            return parent.parent
    return REPO_ROOT
