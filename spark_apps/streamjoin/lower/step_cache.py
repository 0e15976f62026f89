"""Retained steps of the batch interval join kept in executor memory between micro-batches.

In a steady stream each micro-batch joins a second of new rows with a window of retained ones
(`lower.batch_join`). Read back from Parquet, the window costs its size in file opens and
decoding every micro-batch: with a 1-minute window at 10K rows/s that is about 60 files and
600K rows per input, a second of this machine's two cores each time. So once the sink has
joined a step it may keep it: `CHUNK_STEPS` retained steps at a time are cached as one Spark
DataFrame (one partition, on the executors, as any cached frame), tagged with their step
number; a later micro-batch reads a chunk's rows from memory instead of its files. The cache
holds exactly what the files hold (it is filled from them), so results are the same with or
without it, and a restart simply starts without it. At most `MAX_ROWS` rows per input are
cached (a 1-hour window's steps are read from their files as before); a chunk is dropped once
none of its steps is retained.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CHUNK_STEPS = 16  # steps cached together (one Spark job fills them, as part of the next join)
MAX_ROWS = 2_000_000  # rows cached per input at most
STEP = "__step"


@dataclass
class _Chunk:
    steps: frozenset[int]
    rows: int
    frame: object  # a cached pyspark DataFrame: the steps' staged rows and their STEP


def step_of(path: str) -> int:
    """A staged step's number, from its file name (`io.staging`: 00000042.parquet)."""
    return int(Path(path).stem)


class StepCache:
    """`read` gives the rows of a list of step files, from memory where it can; `keep` is told,
    after each micro-batch, which steps are still retained (and how many rows they hold)."""

    def __init__(self, reader, chunk_steps: int | None = None, max_rows: int | None = None):
        self.reader = reader  # (spark, input, files) -> the files' staged rows
        self.chunk_steps = chunk_steps or CHUNK_STEPS
        self.max_rows = MAX_ROWS if max_rows is None else max_rows
        self.chunks: tuple[list[_Chunk], list[_Chunk]] = ([], [])

    def read(self, spark, n: int, files: list[str]):
        """Input n's staged rows of `files` (step files of that input), as `reader` gives them."""
        by_step = {step_of(f): f for f in files}
        parts, rest = [], dict(by_step)
        for chunk in self.chunks[n]:
            wanted = chunk.steps & by_step.keys()
            if not wanted:
                continue
            frame = chunk.frame
            if wanted != chunk.steps:
                frame = frame.where(f"{STEP} IN ({', '.join(str(s) for s in sorted(wanted))})")
            parts.append(frame.drop(STEP))
            for s in wanted:
                del rest[s]
        if rest:
            parts.append(self.reader(spark, n, [rest[s] for s in sorted(rest)]))
        frame = parts[0]
        for part in parts[1:]:
            frame = frame.unionByName(part)
        return frame

    def keep(self, spark, n: int, retained: dict[int, tuple[str, int]]) -> None:
        """After a micro-batch: `retained` maps input n's retained steps to (file, data rows).
        Drops the chunks none of whose steps is retained, then caches the retained steps no
        chunk holds, `chunk_steps` of them at a time (oldest first), within `max_rows`."""
        from pyspark.sql import functions as F

        chunks = self.chunks[n]
        for chunk in [c for c in chunks if not c.steps & retained.keys()]:
            chunk.frame.unpersist()
            chunks.remove(chunk)
        held = set().union(*(c.steps for c in chunks))
        loose = sorted(s for s in retained if s not in held)
        cached = sum(c.rows for c in chunks)
        while len(loose) >= self.chunk_steps:
            steps, loose = loose[: self.chunk_steps], loose[self.chunk_steps:]
            rows = sum(retained[s][1] for s in steps)
            if cached + rows > self.max_rows:
                break
            frame = self.reader(spark, n, [retained[s][0] for s in steps])
            frame = frame.withColumn(STEP, F.regexp_extract(F.col("_metadata.file_name"), r"(\d+)", 1).cast("int"))
            chunks.append(_Chunk(frozenset(steps), rows, frame.coalesce(1).cache()))
            cached += rows

    def rows(self) -> int:
        return sum(c.rows for chunks in self.chunks for c in chunks)

    def clear(self) -> None:
        for chunks in self.chunks:
            for chunk in chunks:
                chunk.frame.unpersist()
            chunks.clear()
