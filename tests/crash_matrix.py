"""The crash-point matrix (issue 65): every engine a join runs on, into every sink it can write,
killed at every crash point (`streamjoin.faults.POINTS`) on its first and on a later pass, started
again on the same checkpoint and run to the end, against an uninterrupted run of the same input:
nothing lost, nothing doubled, the restart ends without an error.

The kill is simulated in the test's own process (`faults.arm(..., simulate=True)`): the point
raises `CrashPointReached`, and from then on every crash point any thread of the run reaches
raises too, so nothing the dead run would not have made durable lands after it. The run is then
abandoned (its Spark query stopped, its threads ended) and a new one starts on the checkpoint, as
a supervisor restarts a killed driver. What a SIGKILL leaves that this does not (half-written files
of the instant of the kill, a JVM that dies with its state) is the process harness's
(tests/crash_harness.py: real kills at points and at random times).

Input arrives in files, one arrival per pass (each of the run's micro-batches reads one), so a
point reached once per batch is reached on the first batch with `:1` and on a later one with `:3`.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runtime_helpers import read_output, ts, write_jsonl

ARRIVALS = 5  # files per stream, one per pass
ROWS = 12  # rows per stream per arrival
SPAN_MS = 30 * 60 * 1000  # each arrival's rows span half an hour: the run crosses hours (markers)
KEYS = 3
DEAD_S = 0.5  # after a simulated kill, before the restart (its objects stay inert after it: faults.generation)


def arrivals(seed: int, streams: str, count: int = ARRIVALS) -> list[dict[str, list[dict]]]:
    """Per arrival, {stream: rows} for streams among a (x), b (y), c (z): rowtimes in order per stream,
    offset per stream so that no two rows of a stream share an instant (ROWS and ASOF joins are then
    fully determined), keys 0..KEYS-1; values number the rows."""
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        files = {}
        for n, (name, column) in enumerate((("a", "x"), ("b", "y"), ("c", "z"))):
            if name in streams:
                files[name] = [{"rowtime": ts(i * SPAN_MS + n * 37_000 + j * (SPAN_MS // ROWS)), "k": rnd.randrange(KEYS),
                                column: 1000 * n + i * ROWS + j} for j in range(ROWS)]
        out.append(files)
    return out


TABLE_ROWS = [(k, f"name-{k}") for k in range(KEYS + 1)]  # key KEYS is never in a stream (a right outer row)


def write_table(root: Path) -> None:
    (root / "t").mkdir(parents=True, exist_ok=True)
    (root / "t" / "t.csv").write_text("k,name\n" + "".join(f"{k},{n}\n" for k, n in TABLE_ROWS))


def write_changes(root: Path, i: int) -> None:
    """Debezium events of table u (k PRIMARY KEY, label) in arrival i: inserts first, then updates
    and a delete, so the changing-table join meets every kind of change across passes."""
    rnd = random.Random(100 + i)
    events = []
    for k in range(KEYS):
        if i == 0 or rnd.random() < 0.6:
            events.append({"op": "c" if i == 0 else "u", "after": {"k": k, "label": f"v{i}-{k}"}})
    if i == 3:
        events.append({"op": "d", "before": {"k": 1}})
    write_jsonl(root / "u" / f"{i:04d}.json", events)


@dataclass(frozen=True)
class Engine:
    """One way a join runs, by a query that takes it (`check` proves it from what was lowered)."""

    name: str
    streams: str  # the streams it reads (a, b, c)
    select: str  # the query (`{into}`: the INSERT INTO of a declared sink, else nothing)
    check: Callable[[object], bool]  # Lowered -> it runs on this engine
    env: dict[str, str] = field(default_factory=dict)
    dialect: str | None = None
    changelog: bool = False  # writes +I / -D changes (`op`): compared folded, and an upsert sink takes it
    key: str = ""  # the upsert sink's primary key (a changelog's)
    spark: bool = True  # a Spark streaming query runs it (else the micro-batch loop on Spark's batch engine)
    table: bool = False  # reads table t
    changes: bool = False  # reads table u, fed by Debezium events
    ordered: bool = True  # EMIT FINAL rows in rowtime order (a files output is checked for it)
    # its rows' rowtime is the instant they were read (a table fed by changes: arrival order), which
    # no two runs share: compared without it
    arrival_time: bool = False

    def sql(self, root: Path, sink: Sink) -> str:
        declared = "".join(
            f"CREATE STREAM {s} (k INT, {c} INT) WITH (connector = 'files', format = 'json', path = '{root / s}', "
            "lateness = '2 SECONDS');\n" for s, c in (("a", "x"), ("b", "y"), ("c", "z")) if s in self.streams)
        if self.dialect == "risingwave":
            declared = "".join(f"CREATE SOURCE {s} (k INT, {c} INT) WITH (connector = 'files', path = '{root / s}') "
                               "FORMAT PLAIN ENCODE JSON;\n" for s, c in (("a", "x"), ("b", "y")) if s in self.streams)
        if self.table:
            declared += f"CREATE TABLE t (k INT PRIMARY KEY, name VARCHAR) WITH (connector = 'files', format = 'csv', path = '{root / 't'}');\n"
        if self.changes:
            declared += (f"CREATE TABLE u (k INT PRIMARY KEY, label VARCHAR) WITH (connector = 'files', path = '{root / 'u'}') "
                         "FORMAT DEBEZIUM ENCODE JSON;\n")
        declaration, into = sink.declare(root, self)
        if self.dialect == "risingwave" and into:
            return declared + self.select.format(into="") + f"\n{declaration.replace('WITH', 'FROM v WITH')}"
        return declared + declaration + self.select.format(into=into)


def _batch(kind: str) -> Callable[[object], bool]:
    def check(lowered) -> bool:
        return lowered.batch is not None and type(lowered.batch).__name__ == kind
    return check


def _operator(lowered) -> bool:
    return lowered.custom and lowered.batch is None


def _spark_join(lowered) -> bool:
    return lowered.batch is None and not lowered.custom and not lowered.upstream and lowered.bucketed is None


WINDOW = "INTERVAL '3' MINUTE"
BETWEEN = "{r}.ROWTIME BETWEEN a.ROWTIME - " + WINDOW + " AND a.ROWTIME + " + WINDOW
ENGINES = {e.name: e for e in [
    Engine("native", "ab", "{into}SELECT STREAM a.ROWTIME AS t, a.k, a.x, b.y FROM a OVER (RANGE " + WINDOW + " PRECEDING) AS a "
           "LEFT JOIN b OVER (RANGE " + WINDOW + " PRECEDING) AS b ON a.k = b.k;", _spark_join,
           env={"STREAMJOIN_JOIN_OPERATOR": "native"}),
    Engine("cut_chain", "abc", "{into}SELECT STREAM ROWTIME, a.k, a.x, b.y, c.z FROM a OVER (RANGE " + WINDOW + " PRECEDING) AS a "
           "LEFT JOIN b OVER (RANGE " + WINDOW + " PRECEDING) AS b ON a.k = b.k "
           "JOIN c OVER (RANGE " + WINDOW + " PRECEDING) AS c ON a.k = c.k;",
           lambda lowered: bool(lowered.upstream) and lowered.batch is None, env={"STREAMJOIN_JOIN_OPERATOR": "native"}),
    Engine("operator_rows", "ab", "{into}SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a OVER (PARTITION BY k ROWS 2 PRECEDING) AS a "
           "FULL JOIN b OVER (RANGE " + WINDOW + " PRECEDING) AS b ON a.k = b.k;", _operator,
           env={"STREAMJOIN_OPERATOR_COLUMNAR": "false"}),
    Engine("operator_columns", "ab", "{into}SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a ASOF LEFT JOIN b ON a.k = b.k "
           "AND b.ROWTIME <= a.ROWTIME;", _operator),
    Engine("operator_regular", "ab", "CREATE MATERIALIZED VIEW v AS SELECT a.k, a.x, b.y FROM a LEFT JOIN b ON a.k = b.k;",
           _operator, dialect="risingwave", changelog=True, key="x, y", ordered=False),
    Engine("operator_changing", "a", "{into}SELECT STREAM ROWTIME, a.k, a.x, u.label FROM a LEFT JOIN u ON a.k = u.k;",
           _operator, changes=True, changelog=True, key="x", ordered=False, arrival_time=True),
    Engine("batch_interval", "ab", "{into}SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a FULL OUTER JOIN b ON a.k = b.k AND "
           + BETWEEN.format(r="b") + ";", _batch("BatchJoin"), env={"STREAMJOIN_JOIN_OPERATOR": "batch"}, spark=False),
    Engine("batch_chain", "abc", "{into}SELECT STREAM ROWTIME, a.k, a.x, b.y, c.z FROM a JOIN b ON a.k = b.k AND "
           + BETWEEN.format(r="b") + " JOIN c ON a.k = c.k AND " + BETWEEN.format(r="c") + ";", _batch("ChainJoin"),
           env={"STREAMJOIN_JOIN_OPERATOR": "batch"}, spark=False),
    Engine("batch_asof", "ab", "{into}SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a ASOF LEFT JOIN b ON a.k = b.k "
           "AND b.ROWTIME <= a.ROWTIME;", lambda lowered: lowered.batch is not None,
           env={"STREAMJOIN_JOIN_OPERATOR": "batch"}, spark=False),
    Engine("batch_rows", "ab", "{into}SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a OVER (PARTITION BY k ROWS CURRENT ROW) AS a "
           "JOIN b OVER (PARTITION BY k ROWS CURRENT ROW) AS b ON a.k = b.k;", lambda lowered: lowered.batch is not None,
           env={"STREAMJOIN_JOIN_OPERATOR": "batch"}, spark=False),
    Engine("batch_regular", "ab", "CREATE MATERIALIZED VIEW v AS SELECT a.k, a.x, b.y FROM a JOIN b ON a.k = b.k;",
           lambda lowered: lowered.batch is not None, env={"STREAMJOIN_JOIN_OPERATOR": "batch"}, dialect="risingwave",
           spark=False, ordered=False),
    Engine("stream_table", "a", "{into}SELECT STREAM ROWTIME, a.k, a.x, t.name FROM a LEFT JOIN t ON a.k = t.k;",
           _spark_join, table=True),
    Engine("bucketed", "a", "CREATE VIEW sums AS SELECT STREAM k, SUM(x) AS total, COUNT(*) AS n FROM a "
           "GROUP BY FLOOR(ROWTIME TO HOUR), k;\n{into}SELECT STREAM FLOOR(ROWTIME TO HOUR) AS h, t.k, t.name, s.total, s.n "
           "FROM sums OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW) AS s RIGHT OUTER JOIN t ON s.k = t.k;",
           lambda lowered: lowered.bucketed is not None, table=True),
    Engine("running", "a", "{into}SELECT STREAM k, COUNT(*) AS n, SUM(x) AS total FROM a GROUP BY k;",
           lambda lowered: lowered.batch is None, changelog=True, key="k", ordered=False),
]}


# ------------------------------------------------------------------------------------------- sinks

@dataclass(frozen=True)
class Sink:
    name: str
    declare: Callable[[Path, Engine], tuple[str, str]]  # (CREATE SINK ..., INSERT INTO ...) or ("", "") for --output
    output: Callable[[Path, Engine], str]  # run's --output
    read: Callable[[Path, Engine], object]  # what it holds, comparable with ==
    s3: bool = False


def s3_path(root: Path) -> str:
    return f"s3://streamjoin/crash-matrix/{root.parent.name}-{root.name}-{uuid.uuid5(uuid.NAMESPACE_URL, str(root)).hex[:10]}"


def _s3_declare(fmt: str, extra: str = "") -> Callable[[Path, Engine], tuple[str, str]]:
    def declare(root: Path, engine: Engine) -> tuple[str, str]:
        options = f"connector = 's3', path = '{s3_path(root)}', format = '{fmt}'{extra}"
        if fmt == "upsert":
            options = f"connector = 's3', path = '{s3_path(root)}', format = 'delta', type = 'upsert', " \
                      f"primary_key = '{engine.key}'{extra}"
        return f"CREATE SINK out WITH ({options});\n", "INSERT INTO out "
    return declare


def canonical(rows, leave_out: tuple[str, ...] = ()) -> list:
    """Rows (dicts) as a sorted list of their items, values as text: a multiset comparable with ==."""
    return sorted(tuple(sorted((k, json.dumps(v, default=str)) for k, v in r.items() if k not in leave_out)) for r in rows)


def folded(rows: list[dict], leave_out: tuple[str, ...] = ()) -> list:
    """A changelog's net content (each -D takes back one +I of its row; a -D of a row not there fails)."""
    content: Counter = Counter()
    for r in rows:
        row = tuple(sorted((k, json.dumps(v, default=str)) for k, v in r.items() if k != "op" and k not in leave_out))
        if r.get("op", "+I") == "+I":
            content[row] += 1
        else:
            assert content[row] > 0, f"-D of {row}, which is not there"
            content[row] -= 1
    return sorted((+content).elements())


def _rows(engine: Engine, rows: list[dict], in_order: bool = True) -> tuple[list, bool]:
    """(the rows as compared, whether they came in rowtime order; `in_order`: the output keeps an
    order to check, as a folder and a one-shard stream do, not a topic's several partitions)."""
    leave_out = ("rowtime",) if engine.arrival_time else ()
    if engine.changelog:
        return folded(rows, leave_out), True
    times = [r.get("rowtime") or r.get("t") or r.get("h") for r in rows]  # (the queries' time columns)
    checked = engine.ordered and in_order and None not in times
    return canonical(rows, leave_out), not checked or times == sorted(times)


def _read_files(root: Path, engine: Engine):
    return _rows(engine, read_output(root / "out"))


def _read_table(root: Path, engine: Engine):
    """A Delta or Parquet sink's committed rows (the hour partition column left out)."""
    import pyarrow.parquet as pq
    from streamjoin.io.sinks.table_sink import HOUR, DeltaCommitter, ManifestCommitter, SinkSpec
    from streamjoin.io.storage import s3

    path, settings = s3_path(root), s3.S3Settings.from_env()
    app_id = json.loads((root / "checkpoint" / "sink.json").read_text())["app_id"] if (root / "checkpoint" / "sink.json").exists() else ""
    delta = DeltaCommitter(SinkSpec("out", path, "delta", None), app_id, settings)
    if delta._table() is not None:
        rows = delta._table().to_pyarrow_table().to_pylist()
    else:
        files = ManifestCommitter(SinkSpec("out", path, "parquet", None), app_id, settings).files()
        filesystem, _ = s3.resolve(path, settings)
        rows = [r for f in files for r in pq.read_table(s3.resolve(f, settings)[1], filesystem=filesystem).to_pylist()]
    rows = [{k: v for k, v in r.items() if k != HOUR} for r in rows]
    return canonical(rows, ("rowtime",) if engine.arrival_time else ()), _markers(path, settings)


def _markers(path: str, settings) -> dict:
    """Each hour's completeness marker: its row count."""
    from streamjoin.io.storage import s3

    marks = {}
    for p in s3.list_files(s3.join(path, "_complete"), settings):
        mark = s3.read_json(p, settings)
        marks[mark["hour"]] = mark["rows"]
    return marks


def _read_topic(root: Path, engine: Engine):
    from kafka_helpers import read_topic
    from streamjoin.io.storage.kafka_client import bootstrap

    # a topic's partitions are read one after another: the changes of one key are in order in its
    # partition (the output is keyed by a changelog's key), the rows of several are not
    return _rows(engine, [value for _, value, _ in read_topic(bootstrap(None), _topic(root))], in_order=False)


def _topic(root: Path) -> str:
    return f"crash-{uuid.uuid5(uuid.NAMESPACE_URL, str(root)).hex[:12]}"


def _read_stream(root: Path, engine: Engine):
    from streamjoin.io.sources import kinesis

    client, rows = kinesis.client(), []
    for shard in client.list_shards(StreamName=_topic(root))["Shards"]:
        iterator = client.get_shard_iterator(StreamName=_topic(root), ShardId=shard["ShardId"],
                                             ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        rows += [json.loads(r["Data"]) for r in client.get_records(ShardIterator=iterator, Limit=10_000)["Records"]]
    return _rows(engine, rows)


def _kinesis_output(root: Path, engine: Engine) -> str:
    from streamjoin.io.sources import kinesis

    client = kinesis.client()
    try:  # (once per run: a restart's output is there; ListStreams shows only the first 100 of a session's)
        client.create_stream(StreamName=_topic(root), ShardCount=1)
    except client.exceptions.ResourceInUseException:
        pass
    return f"kinesis://{_topic(root)}"


NO_SINK = lambda root, engine: ("", "")  # noqa: E731 - the output is run's --output
SINKS = {s.name: s for s in [
    Sink("files", NO_SINK, lambda root, engine: str(root / "out"), _read_files),
    Sink("delta", _s3_declare("delta", ", partitioned_by = 'hour', checkpoint_interval = '1'"), lambda root, engine: str(root / "out"),
         _read_table, s3=True),
    Sink("parquet", _s3_declare("parquet", ", partitioned_by = 'hour'"), lambda root, engine: str(root / "out"), _read_table, s3=True),
    Sink("upsert", _s3_declare("upsert", ", checkpoint_interval = '1'"), lambda root, engine: str(root / "out"), _read_table, s3=True),
    Sink("kafka", NO_SINK, lambda root, engine: f"kafka://{_topic(root)}" + (f"?key={engine.key.replace(' ', '')}" if engine.key else ""),
         _read_topic),
    Sink("kinesis", NO_SINK, _kinesis_output, _read_stream),
]}


def pairs() -> list[tuple[str, str]]:
    """Every (engine, sink) a program can have: S3 sinks take what a Spark streaming query writes
    (the micro-batch loop writes JSON Lines, topics and streams); a changelog goes to an upsert
    table, not an append-only one (which would keep every change), and only a changelog does."""
    def fits(engine: Engine, sink: Sink) -> bool:
        if sink.s3 and not engine.spark:
            return False
        if sink.name in ("delta", "parquet", "upsert") and engine.changelog != (sink.name == "upsert"):
            return False
        return accepted(engine, sink)

    return [(e.name, s.name) for e in ENGINES.values() for s in SINKS.values() if fits(e, s)]


def accepted(engine: Engine, sink: Sink) -> bool:
    """Whether `run` takes the engine's query into the sink (a cut chain writes JSON Lines only)."""
    from streamjoin.errors import Unsupported
    from streamjoin.runtime.pipeline import Pipeline

    try:
        Pipeline.from_sql(engine.sql(Path("/matrix"), sink), "matrix.sql", _settings(engine), dialect=engine.dialect)
    except Unsupported:
        return False
    return True


def points(engine: Engine, sink: Sink) -> list[str]:
    """The crash points a run of `engine` into `sink` passes."""
    found = ["stage.before_manifest", "sink.after_rows", "sink.before_state"]
    if engine.spark:
        found.append("sink.after_batch")
    if sink.s3:
        found += ["sink.before_commit", "sink.after_commit"]
        if sink.name in ("delta", "upsert"):
            found.append("sink.before_delta_checkpoint")
        if sink.name in ("delta", "parquet"):
            found.append("sink.before_marker")
        if not engine.changelog and engine.name != "operator_changing" and engine.name not in ("operator_rows", "operator_columns"):
            found.remove("sink.after_rows")  # rows go from the executors into the table's files (sink.before_commit)
    if sink.name in ("kafka", "kinesis"):
        found.append("sink.inside_release")
    return found


# --------------------------------------------------------------------------------------------- runs

@dataclass
class Outcome:
    committed: object
    crashed: bool
    reached: dict[str, int] = field(default_factory=dict)  # how often the run passed each point (uninterrupted: all of it)


def _settings(engine: Engine):
    from streamjoin.settings import Settings

    return Settings.from_env({**os.environ, **engine.env})


def _runner(spark, engine: Engine, sink: Sink, root: Path):
    from streamjoin.runtime.pipeline import Pipeline

    (root / "query.sql").write_text(engine.sql(root, sink))
    pipeline = Pipeline.from_sql(engine.sql(root, sink), "matrix.sql", _settings(engine), dialect=engine.dialect)
    return pipeline.runner(spark, root / "checkpoint", sink.output(root, engine))


def _write(root: Path, engine: Engine, data: list, i: int) -> None:
    for name, rows in data[i].items():
        write_jsonl(root / name / f"{i:04d}.json", rows)
    if engine.changes:
        write_changes(root, i)


def run(spark, engine_name: str, sink_name: str, root: Path, kill: str | None, seed: int = 7,
        count: int = ARRIVALS) -> Outcome:
    """The pair's run under `root`: each arrival a pass of a live query, then the end of input; with
    `kill` (NAME:N) the run is killed there (simulated) and a new one on the checkpoint goes on
    with the rest of the arrivals, a pass each (so that an engine whose clock is arrival order sees
    the same passes), and the end of input. Returns what the sink holds."""
    from streamjoin import faults

    engine, sink = ENGINES[engine_name], SINKS[sink_name]
    root.mkdir(parents=True, exist_ok=True)
    if engine.table:
        write_table(root)
    data, written = arrivals(seed, engine.streams, count), [0]
    faults.arm(kill, simulate=True)
    runner = None
    try:
        runner = _runner(spark, engine, sink, root)
        assert engine.check(runner.lowered), f"{engine.name}: the query did not run on its engine: {runner.lowered}"
        _passes(runner.start(), root, engine, data, written)
        crashed, reached = False, faults.reached()
    except Exception as error:
        if runner is not None:
            runner.fail(error)  # a killed run's query and threads stopped (what a kill ends)
        if not faults.crashed():
            raise
        crashed, reached = True, faults.reached()
        # still dead a moment: a thread of the killed run that stop() did not wait for (a progress
        # event's release, a Spark callback) ends at its next durable step, as it would have died
        time.sleep(DEAD_S)
    finally:
        faults.arm(None)
    if crashed:  # started again as a supervisor would: on the checkpoint, the input as the kill left it
        runner = _runner(spark, engine, sink, root)
        try:
            _passes(runner.start(), root, engine, data, written)
        except Exception as error:
            runner.fail(error)
            raise
    return Outcome(sink.read(root, engine), crashed, reached)


def _passes(runner, root: Path, engine: Engine, data: list, written: list[int]) -> None:
    """What is there already (after a kill: the killed pass's input), then each arrival not yet
    written, a pass each (`written[0]` counts them), then the end of input."""
    runner.process_available()
    while written[0] < len(data):
        _write(root, engine, data, written[0])
        written[0] += 1
        runner.process_available()
    runner.end_of_input()
    runner.stop("finished")


class Uninterrupted:
    """Each pair's uninterrupted run (what it committed, how often it passed each point), made once."""

    def __init__(self, spark, tmp_path_factory, count: int = ARRIVALS) -> None:
        self.spark, self.tmp, self.count, self.runs = spark, tmp_path_factory, count, {}

    def __call__(self, engine: str, sink: str) -> Outcome:
        if (engine, sink) not in self.runs:
            root = self.tmp.mktemp(f"{engine}-{sink}")
            self.runs[engine, sink] = run(self.spark, engine, sink, root, None, count=self.count)
        return self.runs[engine, sink]


def check(spark, uninterrupted: Uninterrupted, root: Path, engine: str, sink: str, kill: str) -> None:
    """Killed at `kill` (NAME:N, or NAME:later: the third pass, or the last when there are two) and
    started again, the pair commits exactly what its uninterrupted run does."""
    once = uninterrupted(engine, sink)
    point, _, n = kill.partition(":")
    if n == "later":
        passes = once.reached.get(point, 0)
        assert passes >= 2, f"{engine} into {sink} passes {point} {passes} times: no later pass to kill it on"
        kill = f"{point}:{min(3, passes)}"
    outcome = run(spark, engine, sink, root / "killed", kill, count=uninterrupted.count)
    assert outcome.crashed, f"{engine} into {sink} never reached {kill}"
    assert outcome.committed == once.committed  # nothing missing, nothing twice (and the same markers)


SLICE = [  # (engine, sink, kill): make test's, on SLICE_ARRIVALS arrivals; each engine and each sink at least once,
    # every S3 sink at sink.after_commit (only they have that point), in two halves (a test file each: two workers)
    ("native", "delta", "sink.after_commit:2"),  # issue 65: a replay skipped its batch's state
    ("cut_chain", "files", "sink.after_batch:3"),
    ("operator_rows", "kafka", "sink.inside_release:2"),
    ("operator_columns", "files", "sink.before_state:3"),
    ("operator_regular", "upsert", "sink.after_commit:2"),
    ("operator_changing", "kinesis", "sink.after_batch:3"),
    ("batch_interval", "files", "sink.before_state:3"),
    ("batch_chain", "kafka", "sink.after_rows:2"),
    ("batch_asof", "kinesis", "sink.inside_release:1"),
    ("batch_rows", "files", "sink.after_rows:3"),
    ("batch_regular", "files", "stage.before_manifest:3"),
    ("stream_table", "parquet", "sink.after_commit:2"),  # (a cut chain writes JSON Lines only)
    ("bucketed", "delta", "sink.after_commit:1"),
    ("running", "upsert", "sink.before_delta_checkpoint:1"),
]
SLICE_ARRIVALS = 3


def full(n: str) -> list[tuple[str, str, str]]:
    """The whole matrix's kills on pass `n` ("1" or "later"): every pair, every point it passes."""
    return [(e, s, f"{p}:{n}") for e, s in pairs() for p in points(ENGINES[e], SINKS[s])]
