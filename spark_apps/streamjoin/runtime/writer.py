"""Where released rows go: JSON Lines to stdout, or files in a directory (`part-NNNNNNNN.jsonl`,
names that sort in emission order)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from streamjoin.io.jsonlines import format_rows


class RowWriter:
    """Writes released rows: JSON Lines to stdout, or to files in a directory."""

    def __init__(self, target: str):
        self.stdout = target == "-"
        self.dir = None if self.stdout else Path(target)
        if self.dir:
            self.dir.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, rows: list[dict]) -> None:
        lines = format_rows(rows)
        if self.stdout:
            sys.stdout.write("".join(lines))
            sys.stdout.flush()
        elif lines:
            path = self.dir / f"{name}.jsonl"
            tmp = self.dir / f".{name}.jsonl.tmp"
            tmp.write_text("".join(lines))
            os.replace(tmp, path)  # idempotent by name: a replayed batch rewrites the same file
