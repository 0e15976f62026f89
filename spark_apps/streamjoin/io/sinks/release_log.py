"""What a stream sink without transactions has sent (io.sinks.kafka_sink, io.sinks.kinesis_sink): releases
(batches of rows named `part-NNNNNNNN...`, names that sort in emission order, the same name and
rows when a batch is replayed after a crash) marked *pending* before they are sent, with what
finds their records again, and *done* once every record is acknowledged. One small JSON file in
the checkpoint, replaced whole."""

from __future__ import annotations

import json
import os
from pathlib import Path


class ReleaseLog:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.state = json.loads(path.read_text()) if path.exists() else {}

    def done(self, release: str) -> bool:
        """Sent whole before (a replay: send nothing)."""
        return self.state.get("done") is not None and release <= self.state["done"]

    def pending(self, release: str) -> dict | None:
        """What `begin` saved for `release`, if sending it was cut short (None: it never began)."""
        pending = self.state.get("pending")
        return pending if pending and pending["release"] == release else None

    def begin(self, release: str, **found_by) -> None:
        self.state["pending"] = {"release": release, **found_by}
        self._save()

    def finish(self, release: str) -> None:
        self.state["done"], self.state["pending"] = release, None
        self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state))
        os.replace(tmp, self.path)
