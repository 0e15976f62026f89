"""After every micro-batch: release what is final, refresh the status file, log the progress line."""

from __future__ import annotations

import logging

from streamjoin.runtime.ordered_sink import OrderedSink
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

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        if event.progress.name != self.name:
            return  # another query's (a part of a cut chain, a test's)
        try:
            self.sink.release((event.progress.eventTime or {}).get("watermark"))
            if self.query is not None:
                snap = self.status.write(self.query)
                if not self.quiet:
                    progress.info(self.status.line(snap))
        except Exception as error:
            log.debug("release failed", exc_info=True)
            self.error = error
        finally:
            self.handled = max(self.handled, event.progress.batchId)

    def onQueryIdle(self, event):
        if self.query is None or str(event.id) != str(self.query.id):
            return
        try:
            if self.settle is not None:
                self.settle()
        except Exception as error:
            log.debug("settle failed", exc_info=True)
            self.error = error

    def onQueryTerminated(self, event):
        pass
