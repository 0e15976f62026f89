"""The one path from SQL text to a running query: compile (`plan.compile_sql`), check what `run`
runs (`lower.support`), lower onto Spark (`lower.lower`), run (`runtime.runner.Runner`). The CLI,
the app runner, the demo, the benchmarks and the tests all go through here.

>>> pipeline = Pipeline.from_sql("CREATE STREAM s (k INT) WITH (connector = 'files', path = '/in'); SELECT STREAM k FROM s;")
>>> [o.name for o in pipeline.query.output]
['k']
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from streamjoin.errors import Unsupported
from streamjoin.faults import arm
from streamjoin.io.sources.staging import InputSpec
from streamjoin.io.storage import retry
from streamjoin.lower.clauses import into_program_table
from streamjoin.lower.inputs import input_specs
from streamjoin.lower.lowered import Lowered
from streamjoin.lower.physical import PhysicalPlan
from streamjoin.lower.sink_target import topic_target
from streamjoin.lower.strategy import LoweringOptions, running_aggregate
from streamjoin.lower.support import check_runnable, checked_plan
from streamjoin.plan.compile import compile_sql
from streamjoin.plan.model import Kind, Query, Script
from streamjoin.runtime.checkpoint import ran_on
from streamjoin.runtime.runner import Runner, run_outputs, run_query
from streamjoin.runtime.table_sinks import run_table_sinks
from streamjoin.settings import Settings


@dataclass(frozen=True)
class Pipeline:
    script: Script
    query: Query  # the query `run` runs (Script.final)
    filename: str
    options: LoweringOptions

    @classmethod
    def from_sql(cls, sql: str, filename: str = "<sql>", settings: Settings | None = None,
                 declared: tuple[tuple[str, str], ...] = (), dialect: str | None = None,
                 chosen_by: str = "--dialect") -> Pipeline:
        """Compile and check (SqlError, Unsupported: exit 2 in the CLI) before any Spark starts.
        `declared`: inputs an app's config declares (`streamjoin.plan.inputs`); `dialect`: the
        profile to read the file with (None: detected; `dialect.profiles`)."""
        from streamjoin.io.sources.kafka_catalog import topic_columns
        from streamjoin.io.sources.postgres import catalog_columns

        script = compile_sql(sql, filename, declared, dialect, chosen_by, catalog=catalog_columns, topics=topic_columns)
        query = script.final
        if query is None:
            raise Unsupported("the file has no final query to run")
        settings = settings or Settings.from_env()
        retry.configure(settings.storage_retry_s)  # io.storage.retry: how long an S3 outage is ridden out
        if settings.crash_at:
            arm(settings.crash_at)  # the crash harness (tests/crash_harness.py) kills this process there
        options = LoweringOptions.from_settings(settings)
        for each in script.runs:
            check_runnable(script, each, options)
        return cls(script, query, filename, options)

    @classmethod
    def from_file(cls, path: str | Path, settings: Settings | None = None,
                  declared: tuple[tuple[str, str], ...] = (), dialect: str | None = None,
                  chosen_by: str = "--dialect") -> Pipeline:
        return cls.from_sql(Path(path).read_text(encoding="utf-8"), str(path), settings, declared, dialect, chosen_by)

    def input_specs(self, checkpoint: Path, late_root: Path, query: Query | None = None) -> list[InputSpec]:
        return input_specs(self.script, query or self.query, checkpoint, late_root)

    def input_bytes(self, checkpoint: Path) -> int | None:
        """The bytes the stream inputs of the runs hold in local folders now; None when one is not
        a local folder (Kafka, Kinesis, PostgreSQL CDC, S3) or the file declares a table that is
        not its own rows (a snapshot's size is not known here). `run --until-idle` starts a
        smaller JVM below runtime.session.SMALL_INPUT_BYTES."""
        from streamjoin.io.sources.input_files import folder_bytes

        if any(not r.view and r.kind != Kind.STREAM and not r.given for r in self.script.relations):
            return None
        total = 0
        for query in self.script.runs:
            for spec in self.input_specs(checkpoint, checkpoint / "late", query):
                if spec.remote:
                    return None
                total += folder_bytes(Path(spec.path))
        return total

    def lower(self, spark, checkpoint: Path, late_root: Path, until_idle: bool = False, query: Query | None = None) -> Lowered:
        """The query (or one output of several) on Spark (tables' snapshots are taken here);
        `until_idle`: a bounded run."""
        from streamjoin.lower import lower

        query = query or self.query
        plan = self.plan(spark, checkpoint, until_idle, query)
        return lower(spark, self.script, plan, self.input_specs(checkpoint, late_root, query), checkpoint,
                     self.run_options(spark, until_idle))

    def run_options(self, spark, until_idle: bool) -> LoweringOptions:
        """The options of a run: bounded or live, on Spark's master (None: explain's, a local one)."""
        local = spark is None or spark.sparkContext.master.startswith("local")
        return replace(self.options, bounded=until_idle, local=local)

    def plan(self, spark, checkpoint: Path, until_idle: bool = False, query: Query | None = None) -> PhysicalPlan:
        """How the query runs on `checkpoint` (lower.physical): a resumed query keeps the engine
        its checkpoint ran on (runtime.checkpoint.ran_on)."""
        return checked_plan(self.script, query or self.query, self.run_options(spark, until_idle), ran_on(checkpoint))

    def runner(self, spark, checkpoint: Path, output: str, until_idle: bool = False, late_root: Path | None = None,
               name: str | None = None) -> Runner:
        """A runner of the query, not started (`Runner.start`); `name` is what its status and the
        sink's hour markers call the query (default: the SQL file)."""
        if len(self.script.runs) > 1:
            raise Unsupported(f"the application has {len(self.script.runs)} output streams "
                              f"({', '.join(self.script.outputs)}): it runs with `streamjoin run`, not yet as a deployed app")
        output = topic_target(self.script, self.query) or output  # a declared Kafka sink's topic
        late_root = late_root if late_root is not None else default_late_root(checkpoint, output)
        lowered = self.lower(spark, checkpoint, late_root, until_idle)
        return Runner(spark, lowered, checkpoint, output, name or self.filename, until_idle=until_idle)

    def run(self, spark, checkpoint: Path, output: str, until_idle: bool) -> dict[str, dict]:
        """Run until idle (then flush and return) or until SIGTERM/SIGINT; returns the last status
        of each query run: {"query": status}, or {stream: status} for an application's several
        outputs (each with its own checkpoint, `<checkpoint>/outputs/<stream>`)."""
        if len(self.script.runs) == 1:
            output = topic_target(self.script, self.query) or output  # a declared Kafka sink's topic
        late_root = default_late_root(checkpoint, output)
        alone = len(self.script.runs) == 1 and not into_program_table(self.script, self.query)
        if alone and self.query.kind == Kind.TABLE and not running_aggregate(self.query):
            return {"query": run_table_query(spark, self.script, self.query, checkpoint, output, self.filename)}
        if alone:
            lowered = self.lower(spark, checkpoint, late_root, until_idle)
            return {"query": run_query(spark, lowered, checkpoint, output, until_idle, self.filename)}
        outputs, tables, sinks = [], {}, {}
        for query in self.script.runs:
            where = checkpoint / "outputs" / query.name
            if query.kind == Kind.TABLE and not running_aggregate(query) and into_program_table(self.script, query):
                sinks.setdefault(query.sink, []).append(query)  # RisingWave's table sinks: merged into the table, below
            elif query.kind == Kind.TABLE and not running_aggregate(query):  # a view of tables only: one batch
                tables[query.name] = run_table_query(spark, self.script, query, where, output, f"{self.filename} ({query.name})",
                                                     suffix=f"-{query.name}")
            else:
                outputs.append((query.name, self.lower(spark, where, late_root, until_idle, query), where))
        several = len(sinks) + len(tables) + len(outputs) > 1
        for target, into in sinks.items():
            tables[target] = run_table_sinks(spark, self.script, target, into, checkpoint / "outputs" / target, output,
                                             self.filename, suffix=f"-{target}" if several else "")
        statuses = run_outputs(spark, outputs, output, until_idle, self.filename) if outputs else {}
        return {name: tables.get(name) or statuses[name] for name in [*tables, *statuses]}


def default_late_root(checkpoint: Path, output: str) -> Path:
    """Late rows go beside the output (`DIR/late/`), or into the checkpoint for stdout and streams."""
    from streamjoin.io.connectors import output_of

    return Path(output) / "late" if output != "-" and output_of(output) is None else checkpoint / "late"


def run_table_query(spark, script: Script, query: Query, checkpoint: Path, output: str, query_file: str, suffix: str = "") -> dict:
    """A query over tables only (RisingWave's materialized view of tables, after the file's
    INSERT, UPDATE and DELETE): one batch over the tables' snapshots, its rows written once, as
    the view stands. Every run writes them again."""
    import datetime as dt
    import json

    from streamjoin.io.sinks.writer import row_writer
    from streamjoin.lower.native import NativeLowering

    checkpoint.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows = NativeLowering(spark, script, {}, checkpoint).table_frame(query).toArrow()
    row_writer(output, suffix, checkpoint).write_table("part-00000000", rows)
    status = {"query": query_file, "state": "finished", "error": None, "inputs": {}, "rows_emitted": rows.num_rows,
              "rows_emitted_this_run": rows.num_rows, "late_rows": 0, "rejected_rows": 0, "started_at": started,
              "updated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    (checkpoint / "status.json").write_text(json.dumps(status, indent=1))
    return status
