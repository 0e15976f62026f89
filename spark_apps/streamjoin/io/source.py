"""The Spark side of a staged input: a Python streaming data source over the Arrow steps
that `streamjoin.io.staging.Stager` writes. Its offset is the number of staged steps."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from streamjoin.io.staging import InputSpec, Stager


class _Step(InputPartition):
    def __init__(self, path: str):
        self.path = path


class StagedStreamReader(DataSourceStreamReader):
    def __init__(self, spec: InputSpec):
        self.stager = Stager(spec)

    def initialOffset(self) -> dict:
        return {"steps": 0}

    def latestOffset(self) -> dict:
        return {"steps": self.stager.advance()}

    def partitions(self, start: dict, end: dict):
        return [_Step(str(self.stager.step_path(i))) for i in range(start["steps"], end["steps"])]

    def read(self, partition: _Step):
        import pyarrow.ipc as ipc

        with ipc.open_file(partition.path) as reader:
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    def commit(self, end: dict) -> None:
        """Staged steps stay: a restart from an older checkpoint offset reads them again."""


class StagedSource(DataSource):
    """`spark.readStream.format("streamjoin_staged").option("spec", InputSpec.to_json())`."""

    @classmethod
    def name(cls) -> str:
        return "streamjoin_staged"

    def schema(self):
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(Stager(self._spec()).staged_schema)

    def streamReader(self, schema):
        return StagedStreamReader(self._spec())

    def _spec(self) -> InputSpec:
        return InputSpec.from_json(self.options["spec"])
