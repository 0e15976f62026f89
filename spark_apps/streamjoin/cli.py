"""The `streamjoin` command line: one command tree.

  check FILE.sql          parse and analyse; exit 0, or 2 with FILE:LINE:COL: error: ... on stderr
  explain FILE.sql        how each join runs and the physical plan (text), or the plan as data (--format json);
                          --until-idle: the plan of a bounded run
  run QUERY.sql           run the file's query on Spark: JSON Lines to stdout or --output DIR
                          (check, explain, run: --config APP.toml declares inputs the SQL reads)
  snapshot SRC DEST       export a declared table as a new immutable snapshot version
  s3 serve                the embedded S3-compatible server (S3 and Kinesis), until Ctrl-C
  kinesis put STREAM FILE put JSON Lines as Kinesis records (demos, tests)
  kafka serve             the embedded Kafka broker (Tansu), until Ctrl-C
  kafka put TOPIC FILE    put JSON Lines as Kafka records (demos, tests)
  quality check APP       validate one complete hour of an app's output
  report APP --hour H     the hour's report and Data Docs as local files to open (copied from S3)

Exit codes: 0 success, 2 rejected query (errors on stderr as FILE:LINE:COL: error: ...),
1 any other failure, with a one-line reason last on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streamjoin.dialect.profiles import PROFILES
from streamjoin.errors import SqlError, Unsupported, one_line_reason

EXIT_OK, EXIT_FAILURE, EXIT_REJECTED = 0, 1, 2
CONFIG_HELP = ("a TOML file (an app's app.toml) whose [inputs.NAME] and [reference.NAME] declare the input streams "
               "and tables the SQL reads without declaring them (KDA's SOURCE_SQL_STREAM_001; docs/applications.md)")
DIALECT_HELP = ("read the file as this system does (docs/dialects/): kda and sqlstream fold unquoted names to UPPER case; "
                "default: detected from constructs only one dialect has, else streamjoin's own reading")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="streamjoin", description=__doc__.split("\n\nExit codes")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="parse and analyse a SQL file; exit 2 with errors if rejected")
    check.add_argument("file")
    check.add_argument("--config", help=CONFIG_HELP)
    check.add_argument("--dialect", choices=tuple(PROFILES), help=DIALECT_HELP)
    explain = commands.add_parser("explain", help="show how each join of a SQL file runs")
    explain.add_argument("file")
    explain.add_argument("--config", help=CONFIG_HELP)
    explain.add_argument("--dialect", choices=tuple(PROFILES), help=DIALECT_HELP)
    explain.add_argument("--format", choices=("text", "json"), default="text")
    explain.add_argument("--until-idle", action="store_true",
                         help="the plan of a bounded run (`run --until-idle`), which may batch what a live run streams")
    run = commands.add_parser("run", help="run the file's query on Spark")
    run.add_argument("file")
    run.add_argument("--config", help=CONFIG_HELP)
    run.add_argument("--dialect", choices=tuple(PROFILES), help=DIALECT_HELP)
    run.add_argument("--output", default="-", help="a directory for JSON Lines files, or - for stdout (default)")
    run.add_argument("--until-idle", action="store_true", help="process what is there now, flush as end of input, exit")
    run.add_argument("--checkpoint", help="checkpoint directory, kept to resume from (default: a temporary one, removed at exit)")
    snapshot = commands.add_parser("snapshot", help="export a table into a new immutable snapshot version under DEST")
    snapshot.add_argument("file", metavar="TABLE_SOURCE", help="a SQL file declaring the table (CREATE TABLE ... WITH (...))")
    snapshot.add_argument("dest", metavar="DEST", help="the snapshot root: s3://bucket/prefix/name/ or a local folder")
    snapshot.add_argument("--table", help="which declared table to export, when the file declares several")
    s3 = commands.add_parser("s3", help="the embedded S3-compatible server")
    s3_commands = s3.add_subparsers(dest="s3_command", required=True)
    serve = s3_commands.add_parser("serve", help="run the embedded S3 server (it speaks Kinesis too) on localhost until Ctrl-C")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=9000, help="default 9000 (as MinIO)")
    serve.add_argument("--bucket", action="append", default=[], help="a bucket to create (repeatable; default: streamjoin)")
    serve.add_argument("--data", metavar="DIR", help="keep the objects in this folder (<DIR>/<bucket>/<key>) across "
                       "restarts; default: in memory only")
    kinesis = commands.add_parser("kinesis", help="Kinesis Data Streams: put records (demos, tests)")
    kinesis_commands = kinesis.add_subparsers(dest="kinesis_command", required=True)
    put = kinesis_commands.add_parser("put", help="put the rows of JSON Lines files as records, in order")
    put.add_argument("stream", metavar="STREAM")
    put.add_argument("files", metavar="FILE", nargs="+", help="JSON Lines (- for stdin); a rowtime bound is a line too")
    put.add_argument("--key", help="the field whose value is each record's partition key (default: the line number)")
    put.add_argument("--create", type=int, metavar="SHARDS", help="create the stream with SHARDS shards if it does not exist")
    kafka = commands.add_parser("kafka", help="Kafka: the embedded broker, and putting records (demos, tests)")
    kafka_commands = kafka.add_subparsers(dest="kafka_command", required=True)
    kafka_serve = kafka_commands.add_parser("serve", help="run the embedded Kafka broker (Tansu) on localhost until Ctrl-C")
    kafka_serve.add_argument("--host", default="127.0.0.1")
    kafka_serve.add_argument("--port", type=int, default=9092, help="default 9092 (as Kafka)")
    kafka_serve.add_argument("--storage", default="memory://tansu/", help="where topics live: memory://tansu/ (the "
                             "default), or s3://BUCKET/ (the AWS_* variables' S3, e.g. `s3 serve`'s: kept across restarts)")
    kafka_put = kafka_commands.add_parser("put", help="put the rows of JSON Lines files as records, in order")
    kafka_put.add_argument("topic", metavar="TOPIC")
    kafka_put.add_argument("files", metavar="FILE", nargs="+", help="JSON Lines (- for stdin); a rowtime bound is a line too")
    kafka_put.add_argument("--key", help="the field whose value (as JSON) is each record's key (default: no key, "
                           "rows go round the partitions)")
    kafka_put.add_argument("--timestamp", help="the field that is each record's timestamp (default: the producer's clock)")
    kafka_put.add_argument("--create", type=int, metavar="PARTITIONS", help="create the topic with PARTITIONS partitions "
                           "(or add partitions up to that many)")
    kafka_put.add_argument("--bootstrap", help="the brokers (default: STREAMJOIN_KAFKA_BOOTSTRAP, else 127.0.0.1:9092)")
    quality = commands.add_parser("quality", help="the data quality gate of an app's hourly output")
    quality_commands = quality.add_subparsers(dest="quality_command", required=True)
    quality_check = quality_commands.add_parser("check", help="validate one complete hour; exit 0 passed, 1 failed")
    quality_check.add_argument("app", metavar="APP", help="an app directory (include/apps/NAME) or an app name")
    quality_check.add_argument("--hour", required=True, help="the hour, YYYY-MM-DDTHH")
    quality_check.add_argument("--output", help="the app's output (default: OUTPUT_PATH, else [paths] output of app.toml)")
    report = commands.add_parser("report", help="an hour's report and its Data Docs as local files to open (copied from S3)")
    report.add_argument("app", metavar="APP", help="an app directory (include/apps/NAME) or an app name")
    report.add_argument("--hour", required=True, help="the hour, YYYY-MM-DDTHH")
    report.add_argument("--to", metavar="DIR", help="where to copy reports from S3 (default: data/reports-local/ of the repository)")
    report.add_argument("--output", help="the app's output (default: OUTPUT_PATH, else [paths] output of app.toml)")
    report.add_argument("--open", action="store_true", help="also open the report in the default browser")
    args = parser.parse_args(argv)
    args.file = getattr(args, "file", args.command)
    try:
        return {"check": _check, "explain": _explain, "run": _run, "snapshot": _snapshot, "s3": _s3, "kinesis": _kinesis,
                "kafka": _kafka, "quality": _quality, "report": _report}[args.command](args)
    except SqlError as error:
        print(error, file=sys.stderr)
        return EXIT_REJECTED
    except Unsupported as error:
        print(f"{args.file}: error: {error}", file=sys.stderr)
        return EXIT_REJECTED
    except Exception as error:  # noqa: BLE001 - the entry point: the last line says why, for the operator and for tools
        text = str(error)
        if "\n" in text:
            print(text, file=sys.stderr)  # the details (a Spark plan, a worker's traceback) first
        print(f"streamjoin: {one_line_reason(error)}", file=sys.stderr)
        return EXIT_FAILURE


def _text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8") if path != "-" else sys.stdin.read()


def _load(path: str, config: str | None = None, dialect: str | None = None):
    from streamjoin.io.sources.kafka_catalog import topic_columns
    from streamjoin.io.sources.postgres import catalog_columns
    from streamjoin.plan import compile_sql

    declared, configured = _config(config)
    return compile_sql(_text(path), path, declared, dialect or configured, _chosen_by(dialect, config),
                       catalog=catalog_columns, topics=topic_columns)


def _chosen_by(dialect: str | None, config: str | None) -> str:
    return "--dialect" if dialect else f"dialect in {config}"


def _config(config: str | None) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """The declarations of `--config FILE` (streamjoin.plan.inputs) and its `dialect`, if any."""
    if not config:
        return (), None
    import tomllib

    from streamjoin.plan.inputs import declarations

    try:
        parsed = tomllib.loads(Path(config).read_text(encoding="utf-8"))
    except OSError as error:
        raise Unsupported(f"--config {config}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise Unsupported(f"--config {config}: not TOML: {error}") from None
    dialect = parsed.get("dialect")
    if dialect is not None and not isinstance(dialect, str):
        raise Unsupported(f"--config {config}: dialect must be a name ({', '.join(PROFILES)})")
    return declarations(parsed, config), dialect


def _check(args) -> int:
    script = _load(args.file, args.config, args.dialect)
    queries = len(script.queries)
    joins = sum(len(q.joins) for q in script.queries)
    pumps = f", {len(script.pumps)} pump{'s' * (len(script.pumps) != 1)}" if script.pumps else ""
    for note in script.notes:
        if note.startswith("warning:"):
            print(f"{args.file}: {note}", file=sys.stderr)
    dialect = f"; dialect {script.dialect}, {script.dialect_reason}" if script.dialect != "default" else ""
    print(f"{args.file}: ok ({queries} quer{'y' if queries == 1 else 'ies'}, {joins} join{'s' * (joins != 1)}{pumps}{dialect})",
          file=sys.stderr)
    return EXIT_OK


def _explain(args) -> int:
    from dataclasses import replace

    from streamjoin.lower.explain import explain_json, explain_text
    from streamjoin.lower.strategy import LoweringOptions
    from streamjoin.settings import Settings

    script = _load(args.file, args.config, args.dialect)
    options = replace(LoweringOptions.from_settings(Settings.from_env()), bounded=args.until_idle)
    sys.stdout.write(explain_json(script, options) if args.format == "json" else explain_text(script, options))
    return EXIT_OK


def _run(args) -> int:
    import shutil
    import tempfile

    from streamjoin.runtime.pipeline import Pipeline, default_late_root
    from streamjoin.runtime.status import summary
    from streamjoin.settings import Settings

    settings = Settings.from_env()
    declared, configured = _config(args.config)
    pipeline = Pipeline.from_sql(_text(args.file), args.file, settings, declared, args.dialect or configured,
                                 _chosen_by(args.dialect, args.config))  # before Spark starts: rejections are quick
    # an ad-hoc run (no --checkpoint) gets a temporary checkpoint, removed when it ends however it ends
    checkpoint = Path(args.checkpoint) if args.checkpoint else Path(tempfile.mkdtemp(prefix="streamjoin-"))
    late = default_late_root(checkpoint, args.output)
    if args.checkpoint or args.output != "-":
        print(f"streamjoin: checkpoint {checkpoint}, late rows under {late}", file=sys.stderr)
    else:
        print(f"streamjoin: temporary checkpoint {checkpoint} (removed at exit); late and rejected rows are counted, "
              "not kept (--output DIR or --checkpoint DIR keeps them)", file=sys.stderr)
    ended = sorted(p.parent.name for p in checkpoint.glob("**/sources/*/END"))
    if ended:  # io.sources.staging: an ended input reads nothing more, whatever has arrived since
        print(f"streamjoin: warning: checkpoint {checkpoint} reached end of input in an earlier --until-idle run "
              f"({', '.join(ended)}): nothing that arrived since is read; give the run a new checkpoint to read it",
              file=sys.stderr)
    try:
        statuses = _run_on_spark(pipeline, settings, checkpoint, args)
    finally:
        if not args.checkpoint:
            shutil.rmtree(checkpoint, ignore_errors=True)
    for name, status in statuses.items():  # an application's several outputs: a line each
        print(f"streamjoin: {'' if name == 'query' else name + ': '}{summary(status)}", file=sys.stderr)
    return EXIT_OK


def _run_on_spark(pipeline, settings, checkpoint: Path, args) -> dict[str, dict]:
    from streamjoin.runtime.session import SMALL_INPUT_BYTES, spark_session

    _log_progress()
    size = pipeline.input_bytes(checkpoint) if args.until_idle else None
    spark = spark_session(settings=settings, bounded=args.until_idle, small=size is not None and size <= SMALL_INPUT_BYTES)
    try:
        return pipeline.run(spark, checkpoint, args.output, args.until_idle)
    finally:
        spark.stop()  # before the last line: the JVM's shutdown logs must not follow it


def _log_progress() -> None:
    """The runtime's progress line per micro-batch on stderr: as it is for tools and files, through
    rich (colour, no wrapping into the next line) on a terminal."""
    import logging

    if sys.stderr.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(stderr=True, soft_wrap=True), show_time=False, show_level=False,
                              show_path=False, markup=False, highlighter=None)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
    progress = logging.getLogger("streamjoin.progress")
    progress.addHandler(handler)
    progress.setLevel(logging.INFO)
    progress.propagate = False


def _s3(args) -> int:
    from streamjoin.io.storage.embedded_s3 import serve

    serve(args.host, args.port, args.bucket, sys.stdout, data_dir=args.data)
    return EXIT_OK


def _kinesis(args) -> int:
    """`kinesis put`: the files' lines as records (io.sources.kinesis.put); one line on stderr says how many."""
    from streamjoin.io.sources.kinesis import put

    lines = []
    for name in args.files:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        lines += data.splitlines()
    sent = put(args.stream, lines, key=args.key, shards=args.create)
    print(f"streamjoin: put {sent} records into {args.stream}", file=sys.stderr)
    return EXIT_OK


def _kafka(args) -> int:
    """`kafka serve` (io.storage.kafka_broker.serve) or `kafka put` (one line on stderr says how many)."""
    from streamjoin.io.storage import kafka_broker

    if args.kafka_command == "serve":
        kafka_broker.serve(args.host, args.port, args.storage, sys.stdout)
        return EXIT_OK
    lines = []
    for name in args.files:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        lines += data.splitlines()
    sent = kafka_broker.put(args.topic, lines, key=args.key, partitions=args.create, servers=args.bootstrap,
                            timestamp=args.timestamp)
    print(f"streamjoin: put {sent} records into {args.topic}", file=sys.stderr)
    return EXIT_OK


def _quality(args) -> int:
    """Validate one hour (`streamjoin.quality`): the summary on stdout, alerts on failure."""
    import logging

    from streamjoin.quality import check_hour

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s", stream=sys.stderr)
    logging.getLogger("streamjoin").setLevel(logging.INFO)  # which alerts went out, where the verdict is
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO at exit would follow the last line
    verdict = check_hour(args.app, args.hour, args.output)
    sys.stdout.write(verdict.summary())
    if verdict.passed:
        return EXIT_OK
    print(f"streamjoin: {verdict.app} hour {verdict.hour} failed {len(verdict.failed)} of {verdict.expectations} "
          "quality expectations", file=sys.stderr)
    return EXIT_FAILURE


def _report(args) -> int:
    """Print (and with --open, open) the hour's report and Data Docs as local files."""
    from streamjoin.hour_report import ReportMissing, fetch

    try:
        got = fetch(args.app, args.hour, args.to, args.output)
    except ReportMissing as missing:
        print(f"streamjoin: {missing}", file=sys.stderr)
        return EXIT_FAILURE
    print(f"report:    {got.local_report}" + (f"  (copied from {got.report}/)" if got.report.startswith("s3://") else ""))
    print(f"data docs: {got.local_docs}" if got.local_docs else f"data docs: none at {got.docs}/ (the hour was not checked)")
    if args.open:
        import webbrowser

        webbrowser.open(got.local_report.resolve().as_uri())
    return EXIT_OK


def _snapshot(args) -> int:
    """Read the whole declared table (no query filters, no Spark) and export it as the next
    version under DEST (`streamjoin.io.sources.snapshots`); one line on stdout says which."""
    from streamjoin.io.formats.types import arrow_schema
    from streamjoin.io.sources import snapshots
    from streamjoin.io.sources.tables import read_table
    from streamjoin.plan.model import Kind

    script = _load(args.file)
    declared = [r for r in script.relations if r.kind == Kind.TABLE and not r.view]
    if args.table:
        chosen = [r for r in declared if r.name == args.table] or [r for r in declared if r.name.lower() == args.table.lower()]
        if len(chosen) != 1:
            names = ", ".join(r.name for r in declared) or "none"
            raise Unsupported(f"--table {args.table}: the file declares no such table (its tables: {names})")
    elif len(declared) != 1:
        if not declared:
            raise Unsupported("the file declares no table: CREATE TABLE name (...) WITH (connector = 'files' | 'postgres' | 's3', ...)")
        raise Unsupported(f"the file declares several tables ({', '.join(r.name for r in declared)}): pick one with --table NAME")
    else:
        chosen = declared
    table = chosen[0]
    read = read_table(table.name, dict(table.options), arrow_schema(table.columns))
    meta = snapshots.export(read.rows, args.dest, read.source)
    print(f"snapshot {args.dest} version {meta['version']}: {meta['rows']} rows, sha256 {meta['sha256']}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
