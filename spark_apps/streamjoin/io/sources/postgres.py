"""PostgreSQL tables as Arrow (the Spark source over it is `streamjoin.io.sources.pg_source`; names are
resolved by `streamjoin.io.sources.pg_names`).

A table (or a query) is read with one `SELECT` through ADBC's PostgreSQL driver, which fetches
COPY's binary form straight into Arrow: every value arrives typed (an empty string is '', NULL is
null, decimals and timestamps exact to their scale and microsecond). Each column is cast in SQL to
the declared type (`::bigint`, `::numeric(p, s)`, `::timestamptz` in a UTC session, so a
`timestamp without time zone` is taken as UTC), and the result is cast once to the declared Arrow
schema. psycopg2 resolves the names against the catalog and composes the SQL (identifiers quoted
by the driver, never spliced).

>>> parse_url("postgresql://bob:secret@db.example:6543/shop")["port"]
6543
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, unquote, urlsplit

import pyarrow as pa

from streamjoin.io.sources.pg_names import match_column, resolve_table, table_columns

__all__ = ["catalog_columns", "one_line", "parse_url", "primary_key", "read_table", "spark_ddl"]

_SCHEMES = ("postgresql", "postgres")
# URL query parameters passed through to libpq as they are.
_LIBPQ_PARAMS = {
    "user", "password", "sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout",
    "application_name", "options", "target_session_attrs", "gssencmode", "channel_binding",
}


# --------------------------------------------------------------------------- connection


def parse_url(url: str) -> dict:
    """`postgresql://[user[:pw]@]host[:port]/db[?param=value...]` (also `postgres://` and
    `jdbc:postgresql://`) -> keyword arguments of `psycopg2.connect`.

    The user defaults to `$PGUSER`, else `postgres`; without a password libpq falls back to
    `$PGPASSWORD` / `~/.pgpass`. URL parameters that libpq knows are passed through; JDBC's
    `currentSchema` becomes the search_path and `ssl=true` `sslmode=require`.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError("PostgreSQL url is empty")
    raw = url.strip()
    if raw.lower().startswith("jdbc:"):
        raw = raw[len("jdbc:"):]
    parts = urlsplit(raw)
    if parts.scheme.lower() not in _SCHEMES:
        raise ValueError(f"not a PostgreSQL url (want postgresql://[user[:password]@]host[:port]/db): {_redact(url)}")
    try:
        port = parts.port
    except ValueError as e:
        raise ValueError(f"bad port in PostgreSQL url {_redact(url)}: {e}") from None
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or "/" in dbname:
        raise ValueError(f"PostgreSQL url names no database (want postgresql://host[:port]/db): {_redact(url)}")
    kwargs: dict = {"dbname": dbname}
    if parts.hostname:
        kwargs["host"] = unquote(parts.hostname)
    if port is not None:
        kwargs["port"] = port
    if parts.username:
        kwargs["user"] = unquote(parts.username)
    if parts.password is not None:
        kwargs["password"] = unquote(parts.password)
    _url_parameters(parts.query, kwargs, url)
    kwargs.setdefault("user", os.environ.get("PGUSER") or "postgres")
    try:
        kwargs["connect_timeout"] = int(kwargs.get("connect_timeout", 10))
    except ValueError:
        raise ValueError(f"connect_timeout is not a number in PostgreSQL url {_redact(url)}") from None
    return kwargs


def _url_parameters(query: str, kwargs: dict, url: str) -> None:
    """URL parameters into connection arguments: libpq's as they are, JDBC's translated."""
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in _LIBPQ_PARAMS:
            kwargs[key] = value
        elif key == "currentSchema":
            kwargs["options"] = f"-c search_path={value}"
        elif key == "ssl":
            if value.lower() in ("true", "1", "yes", "on", ""):
                kwargs.setdefault("sslmode", "require")
        else:
            raise ValueError(f"unknown parameter {key!r} in PostgreSQL url {_redact(url)}")


def _redact(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


def _location(kwargs: dict) -> str:
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 5432)}/{kwargs['dbname']}"


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _connect(url: str):
    """An open read-only connection in a UTC, ISO-dated session, and `host:port/db`."""
    import psycopg2

    kwargs = parse_url(url)
    location = _location(kwargs)
    try:
        conn = psycopg2.connect(**kwargs)
    except psycopg2.Error as e:
        raise ValueError(f"cannot connect to PostgreSQL at {location}: {one_line(e)}") from None
    try:
        conn.set_client_encoding("UTF8")
        conn.set_session(readonly=True)
        with conn.cursor() as cur:
            cur.execute("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 1")
    except psycopg2.Error as e:
        conn.close()
        raise ValueError(f"cannot set up a PostgreSQL session at {location}: {one_line(e)}") from None
    return conn, location


# --------------------------------------------------------------------------- types


def _select_expr(col, dtype: pa.DataType):
    """The SQL expression casting `col` to the PostgreSQL type that reads back as `dtype`."""
    from psycopg2 import sql

    return sql.SQL("({})::" + _pg_type(dtype)).format(col)


def _pg_type(dtype: pa.DataType) -> str:
    t = pa.types
    if t.is_string(dtype) or t.is_large_string(dtype) or t.is_string_view(dtype):
        return "text"
    if t.is_boolean(dtype):
        return "boolean"
    if t.is_integer(dtype):
        if t.is_signed_integer(dtype):
            return {8: "smallint", 16: "smallint", 32: "integer", 64: "bigint"}[dtype.bit_width]
        return "bigint" if dtype.bit_width < 64 else "numeric(20, 0)"
    if t.is_float32(dtype):
        return "real"
    if t.is_float64(dtype):
        return "double precision"
    if t.is_decimal(dtype):
        return f"numeric({dtype.precision}, {dtype.scale})"
    if t.is_date(dtype):
        return "date"
    if t.is_timestamp(dtype):
        return "timestamptz"
    if t.is_list(dtype) or t.is_large_list(dtype):  # an ARRAY column (double precision[])
        return _pg_type(dtype.value_type) + "[]"
    raise ValueError(f"Arrow type {dtype} is not supported by the PostgreSQL reader")


def _arrow_to_spark(dtype: pa.DataType) -> str:
    t = pa.types
    simple = [
        (t.is_int8, "TINYINT"), (t.is_int16, "SMALLINT"), (t.is_int32, "INT"), (t.is_int64, "BIGINT"),
        (t.is_float32, "FLOAT"), (t.is_float64, "DOUBLE"), (t.is_boolean, "BOOLEAN"),
        (t.is_string, "STRING"), (t.is_large_string, "STRING"), (t.is_date, "DATE"),
    ]
    for test, name in simple:
        if test(dtype):
            return name
    if t.is_decimal(dtype):
        return f"DECIMAL({dtype.precision},{dtype.scale})"
    if t.is_timestamp(dtype):
        return "TIMESTAMP" if dtype.tz else "TIMESTAMP_NTZ"
    if t.is_list(dtype) or t.is_large_list(dtype):
        return f"ARRAY<{_arrow_to_spark(dtype.value_type)}>"
    raise ValueError(f"Arrow type {dtype} has no Spark equivalent in the PostgreSQL reader")


def spark_ddl(schema: pa.Schema) -> str:
    """Spark DDL of an Arrow schema: `id INT, name STRING, price DECIMAL(10,2), ts TIMESTAMP`."""
    return ", ".join(f"{_quote_spark(f.name)} {_arrow_to_spark(f.type)}" for f in schema)


def _quote_spark(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"


# --------------------------------------------------------------------------- reading


def read_table(
    url: str,
    table: str | None,
    query: str | None,
    schema: pa.Schema,
    where: str | None = None,
    columns: list[str] | None = None,
) -> pa.Table:
    """The rows of `table` (`name` or `schema.name`) or of `query` (read as a subquery) as an Arrow
    table with exactly `schema` (or its `columns`, in schema order).

    `where` is a PostgreSQL boolean expression over the unqualified column names, evaluated by
    PostgreSQL. Schema fields match columns by name, ignoring case unless the table has columns
    differing only in case (then the exact spelling wins). Errors are ValueErrors naming the table.
    """
    import psycopg2
    from psycopg2 import sql

    if (table is None) == (query is None):
        raise ValueError("read_table needs exactly one of table and query")
    fields = list(schema)
    if columns is not None:
        wanted = {c.lower() for c in columns}
        unknown = sorted(wanted - {f.name.lower() for f in fields})
        if unknown:
            raise ValueError(f"columns {unknown} are not in the schema of {table or 'the query'} ({', '.join(schema.names)})")
        fields = [f for f in fields if f.name.lower() in wanted]
    out_schema = pa.schema(fields, metadata=schema.metadata)

    conn, location = _connect(url)
    label = f"PostgreSQL table {table!r} at {location}" if table is not None else f"PostgreSQL query at {location}"
    try:
        with conn.cursor() as cur:
            if table is not None:
                oid, nsp, rel = resolve_table(cur, table, location)
                source = sql.Identifier(nsp, rel)
                available = table_columns(cur, oid)
            else:
                source = sql.SQL("({}) AS _q").format(sql.SQL(query.strip().rstrip(";")))
                cur.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(source))
                available = [d.name for d in cur.description]
            exprs = [
                sql.SQL("{} AS {}").format(_select_expr(sql.Identifier(match_column(f.name, available, label)), f.type),
                                           sql.Identifier(f"c{i}"))
                for i, f in enumerate(fields)
            ]
            if not exprs:  # nothing to read but the number of rows
                count = sql.SQL("SELECT count(*) FROM {}").format(source)
                if where:
                    count = sql.SQL("{} WHERE ({})").format(count, sql.SQL(where))
                cur.execute(count)
                n = cur.fetchone()[0]
                return pa.Table.from_struct_array(pa.array([{}] * n, type=pa.struct([]))).replace_schema_metadata(
                    out_schema.metadata
                )
            select = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(exprs), source)
            if where:
                select = sql.SQL("{} WHERE ({})").format(select, sql.SQL(where))
            text = select.as_string(conn)
    except psycopg2.Error as e:
        raise ValueError(f"cannot read {label}: {one_line(e)}") from None
    finally:
        conn.close()

    fetched = _fetch_arrow(url, text, label, location)
    try:
        return fetched.rename_columns(out_schema.names).cast(out_schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValueError(f"cannot convert {label} to Arrow: {one_line(e)}") from None


def _fetch_arrow(url: str, text: str, label: str, location: str) -> pa.Table:
    """The result of one SELECT as Arrow, by ADBC (COPY's binary form), in a read-only UTC session."""
    import adbc_driver_manager
    import adbc_driver_postgresql.dbapi as adbc
    from psycopg2.extensions import make_dsn

    try:
        conn = adbc.connect(make_dsn(**parse_url(url)))
    except adbc_driver_manager.Error as e:
        raise ValueError(f"cannot connect to PostgreSQL at {location}: {one_line(e)}") from None
    try:
        with conn.cursor() as cur:
            cur.execute("SET TRANSACTION READ ONLY")  # the first statement of the driver's transaction
            cur.execute("SET LOCAL TimeZone = 'UTC'")
            cur.execute(text)
            return cur.fetch_arrow_table()
    except adbc_driver_manager.Error as e:
        raise ValueError(f"cannot read {label}: {one_line(e)}") from None
    finally:
        conn.close()


def primary_key(url: str, table: str) -> tuple[str, ...]:
    """The primary key columns of `table` (`name` or `schema.name`), lower case, in key order;
    `()` if it has none."""
    import psycopg2

    conn, location = _connect(url)
    try:
        with conn.cursor() as cur:
            oid, _, _ = resolve_table(cur, table, location)
            cur.execute(
                """
                SELECT a.attname
                FROM pg_catalog.pg_index i
                CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                WHERE i.indrelid = %s AND i.indisprimary
                ORDER BY k.ord
                """,
                (oid,),
            )
            return tuple(r[0].lower() for r in cur.fetchall())
    except psycopg2.Error as e:
        raise ValueError(f"cannot read the primary key of PostgreSQL table {table!r} at {location}: {one_line(e)}") from None
    finally:
        conn.close()


def catalog_columns(url: str, table: str) -> list[tuple[str, str]]:
    """The columns of `table` (`name` or `schema.name`) as the database declares them: (name, type
    in streamjoin's SQL), in the table's order. An s-Server JDBC foreign table declared without
    columns takes them from here when the script is read, as s-Server does."""
    import psycopg2
    from sqlglot import exp

    conn, location = _connect(url)
    try:
        with conn.cursor() as cur:
            oid, _, _ = resolve_table(cur, table, location)
            cur.execute(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute "
                "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                (oid,),
            )
            rows = cur.fetchall()
    except psycopg2.Error as e:
        raise ValueError(f"cannot read the columns of PostgreSQL table {table!r} at {location}: {one_line(e)}") from None
    finally:
        conn.close()
    return [(name, exp.DataType.build(kind, dialect="postgres").sql("risingwave")) for name, kind in rows]
