"""`streamjoin run`'s running query: a `Runner` stages the inputs (`io.sources.staging`), runs the lowered
query (and the earlier parts of a cut chain) on Spark, releases output through its sink, keeps
the status, and stops it. `run_query` drives one for the CLI (`run_outputs` several, an
application's outputs); tests drive it step by step.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from streamjoin.errors import one_line_reason
from streamjoin.io.formats.instants import END_US
from streamjoin.io.sinks.committed_sink import CommittedSink
from streamjoin.io.sinks.ordered_sink import OrderedSink
from streamjoin.io.sinks.stage_sink import StageSink
from streamjoin.io.sinks.writer import row_writer
from streamjoin.io.sources.source import steps_read
from streamjoin.io.sources.staging import Stager
from streamjoin.io.storage.retry import retrying
from streamjoin.lower.lowered import Lowered
from streamjoin.runtime.checkpoint import (
    check_plan,
    check_resumable,
    clear_interrupted_writes,
    logged_batches,
    ran_on,
    stamp,
)
from streamjoin.runtime.listener import ProgressListener
from streamjoin.runtime.status import Status

log = logging.getLogger("streamjoin.run")
# how often the feeder looks for new input: local folders every 0.1 s (a scandir of new names; a
# row waits for the next look, and EMIT EAGER's latency is mostly that wait), inputs read over the
# network (Kafka, Kinesis, CDC, S3: every look a request) every 0.25 s
FEED_S, REMOTE_FEED_S = 0.1, 0.25


class Runner:
    """One running query: start it, feed it, end its input, stop it. `run_query` drives it for
    the CLI; tests drive it step by step."""

    def __init__(self, spark, lowered: Lowered, checkpoint: Path, output: str, query_file: str = "<sql>", quiet: bool = False,
                 until_idle: bool = False, suffix: str = ""):
        """Builds the parts; `start()` starts them. `until_idle`: what the inputs hold now is all
        there is; `end_of_input` then flushes it. The end is staged with those rows, so Spark
        reads, joins and flushes them in two batches (the second one Spark runs by itself, its
        watermark having moved to +infinity). `suffix`: of the output's file names (RowWriter)."""
        self.spark, self.lowered, self.checkpoint, self.until_idle = spark, lowered, checkpoint, until_idle
        # the earlier parts (a chain cut after its outer joins, lower.cut_chain; aggregating views,
        # lower.staged_views): one query each, feeding later ones; this Runner is the last part
        # and drives them all. A part that reads only the user's inputs can end before it starts.
        staged = {part.stage_spec.alias for part in lowered.upstream}
        self.upstream = [  # a part that reads an earlier part's rows ends after it, in end_of_input
            Runner(spark, part, checkpoint / "stages" / str(n), "", query_file, quiet=True,
                   until_idle=until_idle and not any(s.alias in staged for s in part.inputs))
            for n, part in enumerate(lowered.upstream)
        ]
        self.stagers = [Stager(spec) for spec in lowered.inputs]
        self.feed_error: Exception | None = None  # a file that cannot be staged: the query fails
        self._feeding = threading.Lock()  # one staging pass at a time (the feeder thread's, process_available's)
        self._stopping = threading.Event()
        if lowered.stage_output is not None:
            self.sink = StageSink(checkpoint, lowered.stage_spec, lowered.columns, lowered.order_delay_ms,
                                  bounds=not lowered.stage_promotes, custom=lowered.custom, order=lowered.order,
                                  changes=lowered.stage_changes)
        elif lowered.batch is not None:
            from streamjoin.lower.batch.batch_sink import BatchJoinSink

            self.sink = BatchJoinSink(spark, checkpoint, row_writer(output, suffix, checkpoint), lowered.columns, lowered.batch)
        elif lowered.sink is not None:
            self.sink = CommittedSink(checkpoint, lowered, self.input_top_us, query_file)
        else:
            self.sink = OrderedSink(
                checkpoint, row_writer(output, suffix, checkpoint), lowered.columns, lowered.order_delay_ms, lowered.bucketed, self.input_top_us,
                lowered.custom, lowered.emit, lowered.order,
            )
        # staged inputs that are not the user's (a promoting view's are: its rows out of order are late)
        parts = {part.stage_spec.alias for part in lowered.upstream if not part.stage_promotes}
        user = [s for r in [*self.upstream, self] for s in r.stagers if s.spec.alias not in parts]
        self.plan = lowered.plan.to_dict() if lowered.plan is not None else None  # recorded: status.json, plan.json
        self.status = Status(checkpoint, user, self.sink, query_file, lowered.snapshots, self.upstream, self.plan)
        self.name = f"streamjoin-{uuid.uuid4().hex[:12]}"  # the listener hears every query of the session
        self.listener = ProgressListener(self.status, self.sink, self.name, quiet)
        self.query = None
        self._feeder: threading.Thread | None = None
        # a bounded run's part whose rows one Spark batch job computes once its inputs have ended
        # (lower.physical.bounded_aggregation), unless a streaming query began it before
        self.once = until_idle and lowered.bounded_frame is not None and ran_on(checkpoint) != "spark"
        self._runs_state: bool | None = None  # whether the plan Spark runs keeps state (`_stateful`)

    def start(self) -> Runner:
        """Stage what the inputs hold, start every part's query (the earlier parts first) and the
        feeder thread; refuses a checkpoint this streamjoin cannot resume before any part starts."""
        check_resumable(self.checkpoint)
        check_plan(self.checkpoint, self.plan)
        if removed := clear_interrupted_writes(self.checkpoint):
            log.warning("removed what a killed run left half-written in %s: %s", self.checkpoint / "spark", ", ".join(removed))
        self.sink.check_resumable()
        if self.lowered.batch is None and not self.once:  # a Spark streaming query runs it: its logs and the sink agree
            self.sink.check_batches(*logged_batches(self.checkpoint))
        for part in self.upstream:
            part.start()
        stamp(self.checkpoint, self.plan)
        if self.until_idle and not self.upstream:
            self._end_inputs()
        try:
            self.feed()  # before the start: the first batch reads everything there is
        except Exception as error:  # noqa: BLE001 - kept: the runner's next check raises it as the query's failure
            self.feed_error = error
        if self.lowered.batch is not None:  # no Spark streaming query: the feeder starts its joins
            from streamjoin.lower.batch.batch_sink import BatchJoinQuery

            self.query = BatchJoinQuery(self.sink, self.name, self.listener.reported)
        elif self.once:  # a bounded run's aggregating view: one batch job once its inputs end (end_of_input)
            self.query = OnceQuery(self.name, self.listener.reported)
        else:
            self.spark.streams.addListener(self.listener)
            self.query = (
                self.lowered.frame.writeStream.foreachBatch(self.sink)
                .queryName(self.name)
                .option("checkpointLocation", str(self.checkpoint / "spark"))
                .trigger(processingTime="500 milliseconds")
                .start()
            )
        self.listener.query = self.query
        self.listener.settle = self.settle
        poll = REMOTE_FEED_S if any(s.spec.remote for s in self.stagers) else FEED_S
        self._feeder = threading.Thread(target=self._feed_every, args=(poll,), name=f"{self.name}-feeder", daemon=True)
        self._feeder.start()
        self.status.write(self.query)  # at once: a restarted query shows its new snapshots before any batch
        return self

    def input_top_us(self) -> int | None:
        """The latest rowtime, or rowtime bound short of end of input, any input delivered."""
        tops = []
        for s in self.stagers:
            m = s.manifest()
            tops += [v for v in (m.max_rowtime_us,) if v is not None]
            if m.bound_us is not None and m.bound_us < END_US:
                tops.append(m.bound_us - 1)
        return max(tops) if tops else None

    def feed(self) -> None:
        """Stage what the inputs hold now (all inputs at once), as steps Spark reads next. A
        failed step records nothing: the file is read again by the next pass."""
        from concurrent.futures import ThreadPoolExecutor
        from functools import partial

        now_us = int(time.time() * 1_000_000)  # the instant of this pass, for arrival-ordered inputs
        with self._feeding, ThreadPoolExecutor(max_workers=max(1, len(self.stagers))) as pool:
            # an S3 landing zone that cannot be reached is retried (io.storage.retry): the step is redone as it was
            before = [s.manifest().steps if s.spec.arrival else 0 for s in self.stagers]
            staged = [pool.submit(retrying, f"input {s.spec.alias}", partial(s.advance, now_us)) for s in self.stagers]
            steps = [future.result() for future in staged]
            arrival = [(s, b, n) for s, b, n in zip(self.stagers, before, steps, strict=True) if s.spec.arrival]
            if any(n > b for _, b, n in arrival):  # rows arrived at now_us: every arrival clock passes it
                for future in [pool.submit(retrying, f"input {s.spec.alias}", partial(s.advance, now_us, True))
                               for s, b, n in arrival if n == b]:
                    future.result()

    def _feed_every(self, seconds: float) -> None:
        """The feeder thread: stage new files as they arrive, until the query stops or a file
        cannot be staged (then the runner fails the query with that reason)."""
        while self.feed_error is None and not self._stopping.wait(seconds):
            try:
                self.feed()
                self.sink.staged()
            except Exception as error:
                log.debug("staging failed", exc_info=True)
                self.feed_error = error

    def process_available(self) -> None:
        """Ingest and process everything the inputs hold now."""
        for part in self.upstream:
            part.process_available()
        self._raise_if_failed()
        self.feed()
        if self.once:
            return  # its rows are computed once its inputs have ended (end_of_input)
        self.query.processAllAvailable()
        self._raise_if_failed()
        # The listener releases after every batch, but asynchronously, and a restarted query's
        # first batch may never reach it: release here by the last batch's watermark too, so what
        # is final is written when this returns (a release is idempotent, under the sink's lock).
        recent = self.query.recentProgress
        if recent:
            self.sink.release((recent[-1].get("eventTime") or {}).get("watermark"))
            self.status.write(self.query)
        self._raise_if_failed()
        self.settle()

    def settle(self) -> None:
        """Release by the inputs' clock when the query is stateless (or `Lowered.prompt`) and idle.

        A query without a stateful operator (a stream-table join, say) emits every row in the
        batch that reads it, but Spark runs no batch just to move its watermark on, so the last
        hour would wait for the next row. Once every staged step is processed, rows older than
        the join clock (min of the inputs' clocks) can no longer come: release up to it."""
        progress = self.query.lastProgress or {}
        if not progress or (self._stateful(progress) and not self.lowered.prompt):
            return  # Spark's watermark, after each batch, drives a stateful query
        manifests = [s.manifest() for s in self.stagers]
        for stager, m in zip(self.stagers, manifests, strict=True):
            read = [steps_read(self.checkpoint / "spark", source, stager) for source in progress.get("sources", [])]
            read = [n for n in read if n is not None]  # the sources that read this input's steps
            if not read or any(n != m.steps for n in read):
                return  # a step is staged but not processed yet: the next batch settles
        clocks = [s.clock_us(m) for s, m in zip(self.stagers, manifests, strict=True)]
        if clocks and None not in clocks:
            self.sink.settle(min(clocks))

    def _stateful(self, progress: dict) -> bool:
        """Whether the query keeps state (its rows final by Spark's watermark or the operator's holds,
        not by the inputs' clock). A run's first micro-batch reports no `stateOperators`, whatever
        it runs (seen on every stateful query, 2026-12-07): the settle that took it for stateless
        released a restarted operator's rows past its holds, out of rowtime order (issue 65's
        matrix). So the plan Spark ran says it, once per run."""
        if self.lowered.custom or progress.get("stateOperators"):
            return True
        if self._runs_state is None:
            self._runs_state = runs_state(self.query)
        return bool(self._runs_state)

    def end_of_input(self) -> None:
        """Every clock to +infinity: flush all pending results (SEMANTICS §1)."""
        for part in self.upstream:  # each part's rows are all written before the next part ends
            part.end_of_input()
        self._end_inputs()
        deadline = time.time() + 600
        if self.once:
            return self._once(deadline)
        # once the end is staged, processAllAvailable returns only after the batch that reads it
        # and the no-data batch that follows it (Spark constructs that one before reporting idle)
        self.process_available()
        while not all(s.manifest().ended for s in self.stagers):
            if time.time() > deadline:
                raise TimeoutError("the end-of-input flush did not finish within 10 minutes")
            self.process_available()
        self.sink.finish()

    def _once(self, deadline: float) -> None:
        """Stage every input to its end, then compute the part's rows in one batch job (batch 0 of
        its sink: a rerun after a crash past it writes them once) and release them all."""
        while not all(s.manifest().ended for s in self.stagers):
            if time.time() > deadline:
                raise TimeoutError("staging the inputs to their end did not finish within 10 minutes")
            self.feed()
        if self.sink.state().last_batch < 0:
            started = time.time()
            self.sink(self.lowered.bounded_frame(), 0)
            self.query.ran(int((time.time() - started) * 1000))
        self.sink.finish()

    def _end_inputs(self) -> None:
        for s in self.stagers:
            (s.dir / "END").touch()

    def wait_for_signal(self, until=None, tick=None, beside: tuple[Runner, ...] = ()) -> None:
        """Run until SIGTERM/SIGINT, or until `until()` is true (checked every second; `tick()`
        runs then too), then let the running micro-batch finish. `beside`: runners of an
        application's other outputs, watched and failed with this one."""
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        parts = [p for runner in (self, *beside) for p in runner._parts()]
        while not stop.is_set() and all(r.query.isActive and r.listener.error is None and r.feed_error is None
                                        for r in parts):
            if until is not None and until():
                break
            if tick is not None:
                tick()
            stop.wait(1.0)
        for runner in (self, *beside):
            runner._raise_if_failed()
        for r in parts:
            while r.query.isActive and r.query.status.get("isTriggerActive"):
                time.sleep(0.1)  # let the current micro-batch finish

    def _parts(self) -> list[Runner]:
        return [*self.upstream, self]

    def _raise_if_failed(self) -> None:
        for part in self.upstream:
            part._raise_if_failed()
        if self.feed_error is not None:
            raise self.feed_error
        _raise_if_query_failed(self.query)
        if self.listener.error is not None:
            error = self.listener.error
            raise RuntimeError(f"releasing output failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")

    def stop(self, final: str) -> dict:
        for part in self.upstream:
            part.stop(final)
        self._stopping.set()
        if self._feeder is not None:
            self._feeder.join()  # a staging pass in progress ends first: a restart must not stage beside it
        for stager in self.stagers:
            stager.close()
        self.sink.close()
        if self.query is None:  # never started
            return self.status.write(None, final=final)
        # the last batch's progress event may still be releasing output: let it finish, so that
        # a query restarted in this process never has two sinks on one checkpoint
        last = (self.query.lastProgress or {}).get("batchId")
        deadline = time.time() + 5  # a missed release is not lost: the rows stay in the carry
        while last is not None and self.listener.handled < last and time.time() < deadline and self.listener.error is None:
            time.sleep(0.05)
        if self.lowered.batch is None and not self.once:
            self.spark.streams.removeListener(self.listener)  # before stop: no callback into a closing driver
        self.query.stop()
        with self.sink.lock:  # a release still running (a progress event, an idle settle) ends first
            pass
        return self.status.write(self.query, final=final)

    def fail(self, error: Exception) -> None:
        self.status.error = one_line_reason(error)  # the root cause, as the CLI's last line says it
        try:
            self.stop("failed")
        except Exception:
            log.debug("stopping a failed query", exc_info=True)


def run_query(spark, lowered: Lowered, checkpoint: Path, output: str, until_idle: bool, query_file: str) -> dict:
    """Run until idle (then flush and return) or until SIGTERM/SIGINT; returns the last status."""
    runner = Runner(spark, lowered, checkpoint, output, query_file, until_idle=until_idle)
    try:
        runner.start()
        if until_idle:
            runner.end_of_input()
        else:
            runner.wait_for_signal()
    except Exception as error:
        runner.fail(error)
        raise
    return runner.stop("finished" if until_idle else "stopped")


def run_outputs(spark, outputs: list[tuple[str, Lowered, Path]], output: str, until_idle: bool, query_file: str) -> dict:
    """An application's several outputs (name, lowered query, its checkpoint), run side by side in
    one Spark application, each writing its rows (led by their `stream` key) to `output`; a
    directory gets `part-N-NAME.jsonl` files. Returns {name: last status}."""
    runners = [Runner(spark, lowered, checkpoint, output, f"{query_file} ({name})", until_idle=until_idle, suffix=f"-{name}")
               for name, lowered, checkpoint in outputs]
    try:
        for runner in runners:
            runner.start()
        if until_idle:
            for runner in runners:
                runner.end_of_input()
        else:
            runners[0].wait_for_signal(beside=tuple(runners[1:]))
    except Exception as error:
        for runner in runners:
            runner.fail(error)
        raise
    final = "finished" if until_idle else "stopped"
    return {name: runner.stop(final) for (name, _, _), runner in zip(outputs, runners, strict=True)}


def _raise_if_query_failed(query) -> None:
    error = query.exception()
    if error is not None:
        raise RuntimeError(one_line_reason(error))  # the root cause (a Python error inside Spark's), not Spark's wrapping


STATE_STORE_WRITER = "org.apache.spark.sql.execution.streaming.operators.stateful.StateStoreWriter"


def runs_state(query) -> bool | None:
    """Whether the last micro-batch of a Spark streaming query ran a stateful operator (Spark's
    StateStoreWriter: a stream-stream join, an aggregation, a state UDF such as streamjoin's
    operator); False for the queries without one of Spark's (the batch join's, a part's one batch
    job); None when no micro-batch has run yet."""
    jquery = getattr(query, "_jsq", None)
    if jquery is None:
        return False
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    execution = jquery.streamingQuery().lastExecution()
    if execution is None:
        return None
    pending = [execution.executedPlan()]
    while pending:
        node = pending.pop()
        if is_instance_of(SparkContext._gateway, node, STATE_STORE_WRITER):
            return True
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.size()))
    return False


class OnceQuery:
    """What the runner reads of a Spark streaming query, for a part computed by one batch job
    (`Runner._once`): active until stopped, its one job reported as batch 0."""

    def __init__(self, name: str, reported: Callable[[int], None]):
        self.id, self.name, self.reported = uuid.uuid4(), name, reported
        self.lastProgress: dict | None = None
        self.recentProgress: list[dict] = []
        self.isActive = True
        self.status = {"message": "waiting for the end of input", "isDataAvailable": False, "isTriggerActive": False}

    def ran(self, duration_ms: int) -> None:
        self.lastProgress = {"id": str(self.id), "name": self.name, "batchId": 0,
                             "durationMs": {"triggerExecution": duration_ms}, "eventTime": {}}
        self.recentProgress = [self.lastProgress]
        self.reported(0)  # the status and the progress line (which `stop` waits for)

    def processAllAvailable(self) -> None:
        pass

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        self.isActive = False
