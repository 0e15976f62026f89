"""The Spark side of a staged input: a Python streaming data source over the Arrow steps
that `streamjoin.io.staging.Stager` writes. Its offset is the number of staged steps."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from streamjoin.io.staging import STEP_CHUNK, InputSpec, Stager


class _Step(InputPartition):
    """Record batches `first` to `last` (exclusive) of one staged step."""

    def __init__(self, path: str, first: int = 0, last: int | None = None):
        self.path, self.first, self.last = path, first, last


SEQUENCE = "__seq"  # with option sequence=true: each row's position in its input (SEMANTICS §2)


class StagedStreamReader(DataSourceStreamReader):
    def __init__(self, spec: InputSpec, sequence: bool = False, parallelism: int = 2):
        self.stager = Stager(spec)
        self.sequence = sequence
        self.parallelism = max(1, parallelism)

    def initialOffset(self) -> dict:
        return {"steps": 0}

    def latestOffset(self) -> dict:
        return {"steps": self.stager.advance()}

    def partitions(self, start: dict, end: dict):
        """Each step (written in STEP_CHUNK-row record batches) split into as many partitions
        as Spark has cores, whole batches each, so a large step is read, joined and written by
        every core at once. (One partition per batch cost 16 Python tasks per 1M-row step:
        about twice the read time.)"""
        import pyarrow.ipc as ipc

        parts = []
        for i in range(start["steps"], end["steps"]):
            path = str(self.stager.step_path(i))
            with ipc.open_file(path) as reader:
                batches = reader.num_record_batches
            n = max(1, min(batches, self.parallelism))
            edges = [batches * j // n for j in range(n + 1)]
            parts += [_Step(path, edges[j], edges[j + 1]) for j in range(n)]
        return parts

    def read(self, partition: _Step):
        import pyarrow.ipc as ipc

        with ipc.open_file(partition.path) as reader:
            last = reader.num_record_batches if partition.last is None else partition.last
            for i in range(partition.first, last):
                batch = reader.get_batch(i)
                if self.sequence:
                    import pyarrow as pa

                    # step number, then row within the step: the order the stager read the rows in
                    step = int(partition.path.rsplit("/", 1)[-1].split(".")[0])
                    first = (step << 32) + i * STEP_CHUNK
                    seq = pa.array(range(first, first + batch.num_rows), pa.int64())
                    batch = pa.RecordBatch.from_arrays([*batch.columns, seq], names=[*batch.schema.names, SEQUENCE])
                yield batch

    def commit(self, end: dict) -> None:
        """Staged steps stay: a restart from an older checkpoint offset reads them again."""


def staged_stream(spark, spec: InputSpec, sequence: bool = False):
    """The streaming frame of a staged input (see `StagedSource`)."""
    reader = (
        spark.readStream.format(StagedSource.name()).option("spec", spec.to_json())
        .option("parallelism", str(spark.sparkContext.defaultParallelism))
    )
    return (reader.option("sequence", "true") if sequence else reader).load()


class StagedSource(DataSource):
    """`spark.readStream.format("streamjoin_staged").option("spec", InputSpec.to_json())`, with
    options `sequence` ("true": add SEQUENCE) and `parallelism` (partitions per step, at most):
    `staged_stream` sets them."""

    @classmethod
    def name(cls) -> str:
        return "streamjoin_staged"

    def schema(self):
        import pyarrow as pa
        from pyspark.sql.pandas.types import from_arrow_schema

        schema = Stager(self._spec()).staged_schema
        if self._sequence():
            schema = schema.append(pa.field(SEQUENCE, pa.int64()))
        return from_arrow_schema(schema)

    def streamReader(self, schema):
        return StagedStreamReader(self._spec(), self._sequence(), int(self.options.get("parallelism", "2")))

    def _sequence(self) -> bool:
        return self.options.get("sequence", "false") == "true"

    def _spec(self) -> InputSpec:
        return InputSpec.from_json(self.options["spec"])
