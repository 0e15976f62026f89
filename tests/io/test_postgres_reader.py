"""PostgreSQL tables read into Arrow (`streamjoin.io.sources.postgres`) and by the `streamjoin_pg` Spark source.

Needs a PostgreSQL server ($STREAMJOIN_TEST_PG_URL, default postgresql://postgres@127.0.0.1:5432/test);
the tests fail without one (the machine runs one on 127.0.0.1:5432). Each run uses its own scratch tables.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from pg_helpers import PG_URL, pg_execute
from streamjoin.io.sources import pg_source
from streamjoin.io.sources import postgres as pg

pytestmark = [pytest.mark.postgres]  # every test reads the local PostgreSQL server

URL = PG_URL
UTC = dt.UTC

SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("region", pa.string()),
        ("name", pa.string()),
        ("note", pa.string()),
        ("price", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ts_naive", pa.timestamp("us", tz="UTC")),
        ("ok", pa.bool_()),
        ("qty", pa.int16()),
        ("big", pa.int64()),
        ("tiny", pa.int8()),
        ("ratio", pa.float32()),
        ("score", pa.float64()),
        ("day", pa.date32()),
    ]
)


@pytest.fixture(scope="module")
def tables():
    """(keyed table, unkeyed empty table), created for this module and dropped after it."""
    import psycopg2

    psycopg2.connect(**pg.parse_url(URL)).close()  # a clear failure when the server is missing
    suffix = uuid.uuid4().hex[:12]
    keyed, empty = f"sj_pg_keyed_{suffix}", f"sj_pg_empty_{suffix}"
    pg_execute(
        f"""
        CREATE TABLE {keyed} (
            id integer NOT NULL, region text NOT NULL, "Name" varchar(20), note text,
            price numeric(10, 2), ts timestamptz, ts_naive timestamp, ok boolean, qty smallint,
            big bigint, tiny smallint, ratio real, score double precision, day date,
            PRIMARY KEY (region, id)
        );
        INSERT INTO {keyed} VALUES
          (1, 'eu', 'Alice', '', 12.34, '2024-03-01 12:34:56.123456+00', '2024-03-01 12:34:56.654321',
           true, 3, 9007199254740993, -128, 0.1, 1e-300, '2024-03-01'),
          (2, 'us', NULL, E'a, "quoted"\\nline', 0.05, '1999-12-31 23:59:59.999999-05',
           '1969-12-31 23:59:59.999999', false, -32768, -9223372036854775808, 127, 'NaN', 'Infinity',
           '1900-02-28'),
          (3, 'eu', 'NULL', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        CREATE TABLE {empty} (id integer, label text);
        """
    )
    yield keyed, empty
    pg_execute(f"DROP TABLE IF EXISTS {keyed}; DROP TABLE IF EXISTS {empty};")


def _rows(table: pa.Table) -> dict:
    return {r["id"]: r for r in table.to_pylist()}


def test_a_table_reads_with_its_declared_types_and_nulls(tables):
    keyed, _ = tables
    table = pg.read_table(URL, keyed, None, SCHEMA)
    assert table.schema == SCHEMA
    rows = _rows(table)
    assert set(rows) == {1, 2, 3}
    one, two, three = rows[1], rows[2], rows[3]
    assert (one["region"], one["name"], one["ok"], one["qty"], one["big"], one["tiny"]) == (
        "eu", "Alice", True, 3, 9007199254740993, -128,
    )
    assert (two["ok"], two["qty"], two["big"], two["tiny"]) == (False, -32768, -(2**63), 127)
    assert one["ratio"] == pytest.approx(0.1) and table.schema.field("ratio").type == pa.float32()
    assert one["score"] == 1e-300
    assert two["ratio"] != two["ratio"] and two["score"] == float("inf")  # NaN and Infinity
    assert (one["day"], two["day"]) == (dt.date(2024, 3, 1), dt.date(1900, 2, 28))
    assert all(three[c] is None for c in SCHEMA.names if c not in ("id", "region", "name"))


def test_an_empty_string_stays_empty_and_null_stays_null(tables):
    keyed, _ = tables
    rows = _rows(pg.read_table(URL, keyed, None, SCHEMA))
    assert rows[1]["note"] == ""
    assert rows[3]["note"] is None
    assert rows[2]["name"] is None
    assert rows[3]["name"] == "NULL"  # the word is a string, not a null
    assert rows[2]["note"] == 'a, "quoted"\nline'


def test_a_column_declared_in_lower_case_matches_a_mixed_case_column(tables):
    keyed, _ = tables
    rows = _rows(pg.read_table(URL, keyed.upper(), None, pa.schema([("id", pa.int32()), ("name", pa.string())])))
    assert rows[1]["name"] == "Alice"


def test_decimals_keep_their_scale_exactly(tables):
    keyed, _ = tables
    table = pg.read_table(URL, keyed, None, SCHEMA)
    assert table.schema.field("price").type == pa.decimal128(10, 2)
    rows = _rows(table)
    assert (rows[1]["price"], rows[2]["price"], rows[3]["price"]) == (Decimal("12.34"), Decimal("0.05"), None)


def test_timestamps_are_utc_and_exact_to_the_microsecond(tables):
    keyed, _ = tables
    rows = _rows(pg.read_table(URL, keyed, None, SCHEMA))
    assert rows[1]["ts"] == dt.datetime(2024, 3, 1, 12, 34, 56, 123456, tzinfo=UTC)
    # timestamptz in another zone is converted; a timestamp without zone is taken as UTC
    assert rows[2]["ts"] == dt.datetime(2000, 1, 1, 4, 59, 59, 999999, tzinfo=UTC)
    assert rows[1]["ts_naive"] == dt.datetime(2024, 3, 1, 12, 34, 56, 654321, tzinfo=UTC)
    assert rows[2]["ts_naive"] == dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def test_where_and_columns_are_pushed_into_the_sql(tables):
    keyed, _ = tables
    # ILIKE and the quoted mixed-case column only mean something to PostgreSQL
    table = pg.read_table(URL, keyed, None, SCHEMA, where="\"Name\" ILIKE 'al%' OR price IS NULL", columns=["price", "id"])
    assert table.schema == pa.schema([("id", pa.int32()), ("price", pa.decimal128(10, 2))])
    assert sorted(table.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "price": Decimal("12.34")},
        {"id": 3, "price": None},
    ]


def test_a_query_is_read_as_a_subquery(tables):
    keyed, _ = tables
    schema = pa.schema([("id", pa.int64()), ("total", pa.decimal128(12, 2))])
    table = pg.read_table(URL, None, f"SELECT id, price * 2 AS total FROM {keyed} WHERE id < 3;", schema, where="id > 1")
    assert table.to_pylist() == [{"id": 2, "total": Decimal("0.10")}]


def test_an_empty_table_gives_no_rows_with_the_schema(tables):
    _, empty = tables
    schema = pa.schema([("id", pa.int32()), ("label", pa.string())])
    table = pg.read_table(URL, f"public.{empty}", None, schema)
    assert table.num_rows == 0 and table.schema == schema


def test_the_primary_key_comes_in_key_order_and_is_empty_without_one(tables):
    keyed, empty = tables
    assert pg.primary_key(URL, keyed) == ("region", "id")
    assert pg.primary_key(URL, f"public.{keyed}") == ("region", "id")
    assert pg.primary_key(URL, empty) == ()


def test_an_unknown_table_or_column_is_a_value_error_naming_it(tables):
    keyed, _ = tables
    with pytest.raises(ValueError, match=r"PostgreSQL table 'no_such_table_here' does not exist at 127\.0\.0\.1:5432/test"):
        pg.read_table(URL, "no_such_table_here", None, SCHEMA)
    with pytest.raises(ValueError, match="no_such_table_here"):
        pg.primary_key(URL, "no_such_table_here")
    with pytest.raises(ValueError, match=rf"{keyed}.*has no column 'colour'"):
        pg.read_table(URL, keyed, None, pa.schema([("colour", pa.string())]))
    with pytest.raises(ValueError, match=rf"cannot read PostgreSQL table '{keyed}'.*no_such_column"):
        pg.read_table(URL, keyed, None, SCHEMA, where="no_such_column = 1")


def test_an_unreachable_server_or_bad_url_is_a_value_error(tables):
    with pytest.raises(ValueError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1:1/test: "):
        pg.read_table("postgresql://postgres@127.0.0.1:1/test", "t", None, SCHEMA)
    with pytest.raises(ValueError, match="not a PostgreSQL url"):
        pg.read_table("mysql://127.0.0.1/test", "t", None, SCHEMA)


def test_urls_parse_into_connect_arguments(monkeypatch):
    monkeypatch.delenv("PGUSER", raising=False)
    assert pg.parse_url("jdbc:postgresql://bob:p%40ss@db.example:6543/shop?sslmode=require") == {
        "host": "db.example", "port": 6543, "dbname": "shop", "user": "bob", "password": "p@ss",
        "sslmode": "require", "connect_timeout": 10,
    }
    assert pg.parse_url("postgres://db.example/shop")["user"] == "postgres"
    monkeypatch.setenv("PGUSER", "carol")
    assert pg.parse_url("postgresql://db.example/shop")["user"] == "carol"
    with pytest.raises(ValueError, match="names no database"):
        pg.parse_url("postgresql://db.example")


def test_an_arrow_schema_becomes_a_spark_ddl_string():
    schema = pa.schema(
        [("id", pa.int32()), ("name", pa.string()), ("price", pa.decimal128(10, 2)), ("ts", pa.timestamp("us", tz="UTC"))]
    )
    assert pg.spark_ddl(schema) == "id INT, name STRING, price DECIMAL(10,2), ts TIMESTAMP"


def test_the_spark_source_reads_the_current_contents_on_every_execution(tables, spark):
    keyed, _ = tables
    pg_source.register(spark)
    pg_source.register(spark)  # registering twice is harmless
    df = (
        spark.read.format("streamjoin_pg")
        .options(url=URL, table=keyed, schema=pg_source.encode_schema(SCHEMA), where="region = 'eu'")
        .load()
    )
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields][:6] == [
        ("id", "int"), ("region", "string"), ("name", "string"), ("note", "string"),
        ("price", "decimal(10,2)"), ("ts", "timestamp"),
    ]
    before = {r["id"]: r for r in df.collect()}
    assert set(before) == {1, 3}
    assert before[1]["price"] == Decimal("12.34") and before[1]["note"] == "" and before[3]["note"] is None
    assert before[1]["ts"].replace(tzinfo=None) == dt.datetime(2024, 3, 1, 12, 34, 56, 123456)  # UTC session
    pg_execute(f"UPDATE {keyed} SET price = 99.99 WHERE id = 1")
    try:
        after = {r["id"]: r for r in df.collect()}
        assert after[1]["price"] == Decimal("99.99")
    finally:
        pg_execute(f"UPDATE {keyed} SET price = 12.34 WHERE id = 1")


def test_the_data_session_is_read_only_and_in_utc():
    from streamjoin.io.sources.postgres import _fetch_arrow

    got = _fetch_arrow(URL, "SELECT '2024-01-01 10:00:00'::timestamp::timestamptz AS t", "probe", "here").to_pylist()
    assert got == [{"t": dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC)}]
    with pytest.raises(ValueError, match="read-only transaction"):
        _fetch_arrow(URL, "CREATE TABLE streamjoin_read_only_probe (a int)", "probe", "here")


def test_a_jdbc_foreign_table_declared_without_columns_takes_them_from_the_catalog_when_read():
    from urllib.parse import urlsplit

    from streamjoin.errors import SqlError
    from streamjoin.plan import compile_sql

    table = f"expected_{uuid.uuid4().hex[:8]}"
    pg_execute(f"CREATE TABLE {table} (route varchar(10), rt timestamp, pg_count bigint, share numeric(5,2), "
               "velocities double precision[])")
    parts = urlsplit(URL)
    script_of = """CREATE OR REPLACE SERVER "pg" FOREIGN DATA WRAPPER "SYS_JDBC"
      OPTIONS ("URL" 'jdbc:postgresql://{host}/{db}', "USER_NAME" '{user}', "DRIVER_CLASS" 'org.postgresql.Driver');
    CREATE OR REPLACE FOREIGN STREAM "v" ("route" VARCHAR(10)) SERVER FILE_SERVER OPTIONS (DIRECTORY '/tmp/v');
    CREATE OR REPLACE FOREIGN TABLE expected SERVER "pg" OPTIONS (SCHEMA_NAME 'public', TABLE_NAME '{table}');
    SELECT STREAM s."route", e."pg_count" FROM "v" AS s LEFT JOIN expected AS e ON s."route" = e."route";
    """
    sql = script_of.format(host=parts.netloc.split("@")[-1], db=parts.path.lstrip("/"), user=parts.username, table=table)
    try:
        script = compile_sql(sql, "pct.sql", dialect="sqlstream", catalog=pg.catalog_columns)
        columns = [(c.name, c.type) for c in script.relation("EXPECTED").columns]
        assert columns == [("route", "VARCHAR(10)"), ("rt", "TIMESTAMP"), ("pg_count", "BIGINT"),
                           ("share", "DECIMAL(5, 2)"), ("velocities", "DOUBLE PRECISION[]")]
        # a database that does not answer: refused at the table's name, saying why
        down = sql.replace(parts.netloc.split("@")[-1], "127.0.0.1:1")
        with pytest.raises(SqlError, match=r"pct.sql:4:37: error: table 'EXPECTED' declares no columns, and they could "
                                           r"not be read from its database: cannot connect to PostgreSQL at 127.0.0.1:1"):
            compile_sql(down, "pct.sql", dialect="sqlstream", catalog=pg.catalog_columns)
        with pytest.raises(SqlError, match=r"table 'EXPECTED' declares no columns"):  # nobody to ask
            compile_sql(sql, "pct.sql", dialect="sqlstream")
    finally:
        pg_execute(f"DROP TABLE {table}")
