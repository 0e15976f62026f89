"""After every micro-batch: release what is final, refresh the status file, log the progress line."""

from __future__ import annotations

import json
import logging

from streamjoin.io.sinks.ordered_sink import OrderedSink
from streamjoin.runtime.status import Status

log = logging.getLogger("streamjoin.run")
progress = logging.getLogger("streamjoin.progress")  # one line per micro-batch (the CLI shows it on stderr)


def _listener_base():
    from pyspark.sql.streaming import StreamingQueryListener

    return StreamingQueryListener


class ProgressListener(_listener_base()):
    """Hears every query of the session; acts on its own query's events (`name`). An error is
    kept for the runner to raise (Spark would only log it)."""

    def __init__(self, status: Status, sink: OrderedSink, name: str, quiet: bool = False):
        self.status, self.sink, self.name, self.quiet = status, sink, name, quiet
        self.query = None
        self.settle = None  # Runner.settle, once the query runs
        self.error: Exception | None = None
        self.handled = -1  # the last batch id whose progress was handled

    @property
    def _jlistener(self):
        """The JVM's side of this listener (what `spark.streams.addListener` registers): `_Events`,
        not PySpark's wrapper. PySpark's turns each event into Python field by field, and every
        Java map it iterates ends in an exception that PySpark converts with a dozen class lookups
        in the JVM, each scanning the jars: a third of the JVM's CPU in a steady stream (Java
        Flight Recorder, 2026-11-26). `_Events` reads the progress as one JSON string."""
        from pyspark import SparkContext

        if not hasattr(self, "_events"):
            self._events = SparkContext._jvm.PythonStreamingQueryListenerWrapper(_Events(self))
        return self._events

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        self.progressed(event.progress.name, event.progress.batchId, (event.progress.eventTime or {}).get("watermark"))

    def progressed(self, name: str | None, batch_id: int, watermark: str | None) -> None:
        if name != self.name:
            return  # another query's (a part of a cut chain, a test's)
        self._after_batch(batch_id, watermark, release=True)

    def reported(self, batch_id: int) -> None:
        """A join of the batch interval join, which runs no Spark query (`lower.batch.batch_sink`) and
        releases by itself: the status and the progress line only."""
        self._after_batch(batch_id, None, release=False)

    def _after_batch(self, batch_id: int, watermark: str | None, release: bool) -> None:
        try:
            if release:
                self.sink.release(watermark)
            if self.query is not None:
                snap = self.status.write(self.query)
                if not self.quiet:
                    progress.info(self.status.line(snap))
        except Exception as error:
            log.debug("release failed", exc_info=True)
            self.error = error
        finally:
            self.handled = max(self.handled, batch_id)

    def onQueryIdle(self, event):
        self.idle(str(event.id))

    def idle(self, query_id: str) -> None:
        if self.query is None or query_id != str(self.query.id):
            return
        try:
            if self.settle is not None:
                self.settle()
        except Exception as error:
            log.debug("settle failed", exc_info=True)
            self.error = error

    def onQueryTerminated(self, event):
        pass


class _Events:
    """A py4j callback implementing Spark's `PythonStreamingQueryListener` for `ProgressListener`:
    each event's few fields we use, read with as few calls into the JVM as possible."""

    def __init__(self, listener: ProgressListener):
        self.listener = listener

    def onQueryStarted(self, jevent) -> None:
        pass

    def onQueryProgress(self, jevent) -> None:
        progress = json.loads(jevent.progress().json())
        self.listener.progressed(progress.get("name"), progress.get("batchId", -1),
                                 (progress.get("eventTime") or {}).get("watermark"))

    def onQueryIdle(self, jevent) -> None:
        self.listener.idle(jevent.id().toString())

    def onQueryTerminated(self, jevent) -> None:
        pass

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
