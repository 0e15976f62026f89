"""Errors a user can act on: a position in their SQL, a message and a hint."""

from __future__ import annotations

from dataclasses import dataclass


def position_of(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset in text."""
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


@dataclass
class SqlError(Exception):
    """A rejected query: `FILE:LINE:COL: error: message`, then the hint."""

    message: str
    filename: str = "<sql>"
    line: int = 1
    col: int = 1
    hint: str | None = None

    def __str__(self) -> str:
        text = f"{self.filename}:{self.line}:{self.col}: error: {self.message}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text


class SqlErrors(Exception):
    """Several rejections of one script, reported together in source order."""

    def __init__(self, errors: list[SqlError]):
        self.errors = sorted(errors, key=lambda e: (e.line, e.col))
        super().__init__("\n".join(str(e) for e in self.errors))


class Unsupported(Exception):
    """A valid query the runtime cannot run yet: rejected (exit 2) before any data is read."""


def one_line_reason(error: Exception) -> str:
    """The root cause in one line: a Python worker's `XError: ...` inside a Spark error, if any."""
    import re

    text = str(error)
    # a traceback names the class with its module (streamjoin.io.storage.retry.StorageUnavailableError)
    causes = re.findall(r"^\s*(?:\w+\.)*(\w+(?:Error|Exception)): (.+)$", text, flags=re.MULTILINE)
    causes = [c for c in causes if not c[0].startswith(("StreamingQuery", "Py4J", "ForeachBatchUserFunc"))]
    if causes:
        name, message = causes[-1]
        return f"{name}: {message.strip()}"
    first = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {first}"


class CheckpointMismatch(RuntimeError):
    """A checkpoint whose parts disagree about what was done (Spark's logs, the sink's record, the
    sink's table): resuming it would skip or repeat rows, so the run stops before anything starts."""
