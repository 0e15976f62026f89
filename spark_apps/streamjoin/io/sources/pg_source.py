"""PostgreSQL tables as a Spark batch data source (`streamjoin_pg`), read by
`streamjoin.io.sources.postgres.read_table` in one partition.

The source re-reads the table every time its plan runs (nothing is cached), which is what the
static side of a process-time temporal join needs: each micro-batch sees the table's current
contents. Its schema travels as the `schema` option, a hex-serialized Arrow schema.
"""

from __future__ import annotations

import pyarrow as pa

from streamjoin.io.sources.postgres import one_line, read_table, spark_ddl

__all__ = ["PostgresTableSource", "decode_schema", "encode_schema", "register"]


def decode_schema(hex_schema: str) -> pa.Schema:
    """The Arrow schema of the `schema` option: `schema.serialize().to_pybytes().hex()`."""
    import pyarrow.ipc as ipc

    try:
        return ipc.read_schema(pa.py_buffer(bytes.fromhex(hex_schema)))
    except (ValueError, pa.ArrowException) as e:
        raise ValueError(f"option 'schema' is not a hex-serialized Arrow schema: {one_line(e)}") from None


def encode_schema(schema: pa.Schema) -> str:
    return schema.serialize().to_pybytes().hex()


try:
    from pyspark.sql.datasource import DataSource, DataSourceReader
except ImportError:  # pragma: no cover - the functions above work without Spark
    DataSource = DataSourceReader = object  # type: ignore[misc, assignment]


class PostgresTableReader(DataSourceReader):
    """Reads the whole table in one partition, afresh on every execution."""

    def __init__(self, options: dict, spark_schema):
        self.url = options["url"]
        self.table = options.get("table")
        self.query = options.get("query")
        self.where = options.get("where")
        self.hex_schema = options["schema"]
        self.spark_schema = spark_schema

    def read(self, partition):
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow_schema = decode_schema(self.hex_schema)
        # Spark wants batches in the columns (and types) of the schema it asked for, which a user
        # may have narrowed with `.schema(...)`.
        by_name = {f.name.lower(): f.name for f in arrow_schema}
        names = [by_name.get(n.lower()) for n in self.spark_schema.fieldNames()]
        if None in names:
            missing = [n for n, m in zip(self.spark_schema.fieldNames(), names, strict=True) if m is None]
            raise ValueError(f"columns {missing} are not in the 'schema' option ({', '.join(arrow_schema.names)})")
        table = read_table(self.url, self.table, self.query, arrow_schema, where=self.where, columns=names)
        table = table.select(names)
        expected = to_arrow_schema(self.spark_schema, timezone="UTC")
        table = table.rename_columns(expected.names).cast(expected)
        yield from table.to_batches(max_chunksize=64 * 1024)


class PostgresTableSource(DataSource):
    """`spark.read.format("streamjoin_pg").option("url", ...).option("table", ...)` (or `query`)
    `.option("schema", encode_schema(arrow_schema))[.option("where", ...)].load()`; batch only."""

    @classmethod
    def name(cls) -> str:
        return "streamjoin_pg"

    def schema(self) -> str:
        return spark_ddl(self._arrow_schema())

    def reader(self, schema) -> PostgresTableReader:
        self._check_options()
        return PostgresTableReader(dict(self.options), schema)

    def _arrow_schema(self) -> pa.Schema:
        if "schema" not in self.options:
            raise ValueError("the streamjoin_pg source needs option 'schema' (a hex-serialized Arrow schema)")
        return decode_schema(self.options["schema"])

    def _check_options(self) -> None:
        if "url" not in self.options:
            raise ValueError("the streamjoin_pg source needs option 'url'")
        if ("table" in self.options) == ("query" in self.options):
            raise ValueError("the streamjoin_pg source needs exactly one of options 'table' and 'query'")
        self._arrow_schema()


def register(spark) -> None:
    """Register the `streamjoin_pg` source with `spark` (once per session)."""
    if getattr(spark, "_streamjoin_pg_registered", False):
        return
    spark.dataSource.register(PostgresTableSource)
    try:
        spark._streamjoin_pg_registered = True
    except AttributeError:  # pragma: no cover - sessions that refuse attributes just re-register
        pass
