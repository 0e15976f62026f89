"""What lowering gives the runtime: the streaming frame and everything needed to run and release it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from streamjoin.io.sources.staging import InputSpec
from streamjoin.plan.model import Emit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from streamjoin.io.sinks.table_sink import SinkSpec
    from streamjoin.lower.bucketed import BucketedJoin
    from streamjoin.lower.physical import PhysicalPlan
    from streamjoin.lower.tables import Snapshot



class MicroBatchJoin(Protocol):
    """A join of the micro-batch engine (lower.batch: batch_join.BatchJoin and its ASOF and ROWS
    kinds, chain_join.ChainJoin), which its loop (lower.batch.batch_sink) runs."""

    @property
    def specs(self) -> tuple[InputSpec, ...]: ...


@dataclass
class Lowered:
    frame: DataFrame | None  # the streaming DataFrame of output columns plus __rowtime (None: `batch`)
    inputs: list[InputSpec]
    columns: list[str]  # output column names, in order
    order_delay_ms: int  # how far behind the watermark output is final (outer joins)
    snapshots: list[Snapshot] = field(default_factory=list)  # one per table input
    bucketed: BucketedJoin | None = None  # when the last join preserves a table
    sink: SinkSpec | None = None  # for INSERT INTO an S3 sink; None: JSON Lines
    custom: bool = False  # the frame comes from streamjoin's operator (meta rows, holds; streamjoin.operator)
    emit: Emit = Emit.FINAL
    # a chain cut after outer joins (strategy.cuts): the queries before this one, in order; each
    # writes its rows, in rowtime order and with rowtime bounds, to `stage_output` as parquet
    upstream: list[Lowered] = field(default_factory=list)
    stage_output: str | None = None
    stage_spec: InputSpec | None = None  # how the next part reads `stage_output`
    # a view that promotes a new rowtime: its rows are written in its inputs' order without
    # bounds; the reader's staging orders them (its late rows are the user's)
    stage_promotes: bool = False
    # a running aggregate's view (lower.changes): its changes, in the order they were made, each
    # at least at the last bound written (a group's change may carry an older rowtime)
    stage_changes: bool = False
    batch: MicroBatchJoin | None = None  # run by lower.batch.batch_sink without a streaming query
    # its only stateful step emits every row in the batch that reads its input (windowed and
    # running aggregates): idle, the inputs' clock releases rows, as for a stateless query
    # (Runner.settle); Spark would move its watermark only with the next row
    prompt: bool = False
    order: tuple[tuple[str, bool], ...] = ()  # Query.order_within: the output columns rows of one rowtime are sorted by
    # a bounded run's aggregating view (lower.physical.bounded_aggregation): () -> a batch
    # frame of its rows over every staged step, which runtime.runner writes once its inputs end
    bounded_frame: Callable[[], DataFrame] | None = None
    plan: PhysicalPlan | None = None  # lower.physical.PhysicalPlan: how it runs (status.json and the checkpoint record it)
