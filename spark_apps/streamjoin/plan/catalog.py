"""Declarations: CREATE STREAM / TABLE / SOURCE / SINK become Relations."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from sqlglot import exp

from streamjoin.plan.model import Column, Kind, Relation
from streamjoin.plan.scope import Located, ident_name, interval_to_ms, relation_name
from streamjoin.plan.windows import interval_ms


def relation_from_create(create: exp.Create, where: Located, arrival: bool = False,
                         shared: dict[str, dict[str, str]] | None = None) -> Relation:
    """A declared stream, table or sink, with its rowtime, lateness and primary key. `arrival`: a
    stream that declares no time is read in arrival order (`Profile.arrival_rowtime`); `shared`:
    the shared change-data-capture sources a table may be declared FROM (RisingWave's
    `CREATE TABLE t (...) FROM src TABLE 'schema.t'`), by name."""
    kind = (create.text("kind") or "").upper()
    schema = create.this
    table = schema.this if isinstance(schema, exp.Schema) else schema
    name = relation_name(table)
    options = create_options(create)
    if kind != "SINK":
        options = _file_source(options)
    if "from_source" in options:
        options = _from_shared(name, options, shared or {}, where, create)
    if kind == "TABLE" and options.get("connector", "").lower() in CDC_CONNECTORS and "changelog" not in options:
        options["changelog"] = "cdc"  # a table read by its changes (io.sources.pg_cdc)
    columns, primary_key, watermark = _declared(schema)
    if kind == "SINK":
        return Relation(name, Kind.TABLE, tuple(columns), options=tuple(sorted(options.items())))
    columns += _included(create, options, {c.name for c in columns}, where)

    is_stream = kind == "STREAM" or options.get("append_only") == "true"  # RisingWave: an APPEND ONLY table is a stream
    if options.get("changelog") in CHANGELOGS:  # a table fed by its changes: read as the stream of them
        if not primary_key:
            how = options["connector"] if options["changelog"] == "cdc" else f"FORMAT {options['changelog'].upper()}"
            where.fail(f"'{name}' is fed by a changelog ({how}), which changes rows by "
                       "their primary key: it declares none", create.this, "declare it: PRIMARY KEY (id)")
        if options["changelog"] == "upsert" and options.get("connector", "files").lower() != "kafka":
            where.fail(f"'{name}' is FORMAT UPSERT on connector '{options.get('connector', 'files')}': an upsert is "
                       "keyed by its record's key, which only a Kafka message has", create.this,
                       "a file or Kinesis record that is a Debezium event: FORMAT DEBEZIUM ENCODE JSON")
        is_stream = True
    rowtime, lateness, implicit = None, 0, False
    if is_stream and options.get("connector", "").lower() == "kinesis" and "approximate_arrival" not in [c.name for c in columns]:
        columns.append(Column("approximate_arrival", "TIMESTAMP"))  # each record's ApproximateArrivalTimestamp
    if not columns and not is_stream and options.get("connector", "").lower() == "postgres":
        columns = _catalog_columns(name, options, where, create)
    if is_stream:
        rowtime, lateness = _rowtime(columns, options, watermark, where, create)
        if rowtime not in [c.name for c in columns]:
            # s-Server streams carry an implicit ROWTIME column.
            columns.append(Column(rowtime, "TIMESTAMP"))
            implicit = True
    arrival = arrival and implicit and watermark is None and "rowtime" not in options
    return Relation(
        name=name,
        kind=Kind.STREAM if is_stream else Kind.TABLE,
        columns=tuple(columns),
        rowtime=rowtime,
        options=tuple(sorted(options.items())),
        primary_key=tuple(primary_key),
        lateness_ms=lateness,
        implicit_rowtime=implicit,
        arrival_rowtime=is_stream and arrival,
    )


# How a PostgreSQL table's columns are read from its database: (url, table) -> [(name, type)].
# Set by whoever compiles (`compile_sql(..., catalog=io.sources.postgres.catalog_columns)`): the plan
# reads no database itself.
CATALOG: ContextVar[Callable[[str, str], list[tuple[str, str]]] | None] = ContextVar("catalog", default=None)
# Likewise (`compile_sql(..., topics=io.sources.kafka_catalog.topic_columns)`): a Kafka topic's columns, read
# from its records (ValueError: no such topic, no broker, no records), for a Lenses program's topics,
# which it names without declaring them.
TOPICS: ContextVar[Callable[[str], list[tuple[str, str]]] | None] = ContextVar("topics", default=None)


def _declared(schema) -> tuple[list[Column], list[str], exp.WatermarkColumnConstraint | None]:
    """(the columns, the primary key, the WATERMARK clause) a declaration's parentheses hold."""
    columns: list[Column] = []
    primary_key: list[str] = []
    watermark = None
    for item in schema.expressions if isinstance(schema, exp.Schema) else []:
        if isinstance(item, exp.ColumnDef):
            col = ident_name(item.this)
            default = next((c.kind.this for c in item.constraints if isinstance(c.kind, exp.DefaultColumnConstraint)), None)
            columns.append(Column(col, item.args["kind"].sql("risingwave") if item.args.get("kind") else "UNKNOWN",
                                  default.sql() if default is not None else None))
            if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in item.constraints):
                primary_key.append(col)
        elif isinstance(item, exp.WatermarkColumnConstraint):
            watermark = item
        elif isinstance(item, exp.PrimaryKey):
            primary_key.extend(ident_name(e.this if isinstance(e, exp.Ordered) else e) for e in item.expressions)
    return columns, primary_key, watermark


# RisingWave's FORMATs whose rows change a table by its primary key (io.sources.changelog reads them)
CHANGELOGS = ("debezium", "upsert", "cdc")
CDC_CONNECTORS = ("postgres-cdc", "mysql-cdc")  # tables read by their database's changes


def is_shared_cdc_source(create: exp.Create) -> bool:
    """RisingWave's `CREATE SOURCE s WITH (connector = 'postgres-cdc', ...)` without columns: a
    database whose tables are declared `FROM s TABLE 'schema.table'`, not an input of its own."""
    schema = create.this
    return (create_options(create).get("connector", "").lower() in CDC_CONNECTORS
            and not (isinstance(schema, exp.Schema) and schema.expressions))


def _from_shared(name: str, options: dict[str, str], shared: dict[str, dict[str, str]], where: Located, create) -> dict[str, str]:
    """A table declared FROM a shared source: the source's options, its schema and table named."""
    source, _, table = options.pop("from_source").partition(" ")
    source = source.strip('"').lower()
    if source not in shared:
        where.fail(f"table '{name}' is declared FROM '{source}', which is no shared change-data-capture source of this "
                   "file", create.this, f"declare it first: CREATE SOURCE {source} WITH (connector = 'postgres-cdc', ...)")
    schema_name, _, table_name = table.rpartition(".")
    return {**shared[source], "schema.name": schema_name or "public", "table.name": table_name, **options}


def _catalog_columns(name: str, options: dict[str, str], where: Located, create: exp.Create) -> list[Column]:
    """A PostgreSQL table declared without columns (an s-Server JDBC foreign table): its columns,
    read from the database's catalog when the script is read, as s-Server does."""
    from streamjoin.env import expand

    reader = CATALOG.get()
    hint = "declare them (CREATE FOREIGN TABLE name (col TYPE, ...)), or run check where the database answers"
    if reader is None:
        where.fail(f"table '{name}' declares no columns", create.this, hint)
    try:
        url = expand(options.get("url", ""))
        return [Column(c, kind) for c, kind in reader(url, options.get("table") or name)]
    except (ValueError, OSError) as error:
        where.fail(f"table '{name}' declares no columns, and they could not be read from its database: {error}",
                   create.this, hint)
    return []


# RisingWave's INCLUDE columns: their type, and the name they take without AS (`_rw_<connector>_<what>`)
_INCLUDED = {"key": "BYTEA", "partition": "VARCHAR", "offset": "VARCHAR", "timestamp": "TIMESTAMPTZ",
             "payload": "JSONB", "headers": "STRUCT<key VARCHAR, value BYTEA>[]"}


def _included(create: exp.Create, options: dict[str, str], declared: set[str], where: Located) -> list[Column]:
    """RisingWave's `INCLUDE key | partition | offset | timestamp | payload | headers | header 'h'
    type [AS name]`: columns of the connector's metadata, named as RisingWave names them. A row
    whose connector has no such value (a file's) holds NULL there."""
    properties = create.args.get("properties")
    connector = options.get("connector", "").lower().split("-")[0] or "source"
    out = []
    for prop in properties.expressions if properties else []:
        if not isinstance(prop, exp.IncludeProperty):
            continue
        what = prop.name.lower()
        column_def = prop.args.get("column_def")
        if column_def is not None:  # INCLUDE header 'name' type
            kind = column_def.args["kind"].sql("risingwave")
            default = f"_rw_{connector}_header_{column_def.this.name}"
        elif what in _INCLUDED:
            kind, default = _INCLUDED[what], f"_rw_{connector}_{what}"
        else:
            where.fail(f"INCLUDE {prop.name} is not a column RisingWave includes", prop,
                       f"include one of {', '.join(_INCLUDED)} or header 'name' TYPE")
        alias = prop.args.get("alias")
        name = ident_name(alias) if alias is not None else default
        # what fills it (io.sources.kafka reads `include.<column>`)
        options[f"include.{name}"] = f"header:{column_def.this.name}" if column_def is not None else what
        if name not in declared:
            out.append(Column(name, kind))
            declared.add(name)
    return out


def _key(this) -> str:
    """An option's name: `connector`, or a dotted one (`properties.bootstrap.server`) whole."""
    if isinstance(this, exp.Dot):
        return f"{_key(this.this)}.{_key(this.expression)}"
    return this.name.lower() if isinstance(this, exp.Expression) else str(this).lower()


def create_options(create: exp.Create) -> dict[str, str]:
    options: dict[str, str] = {}
    properties = create.args.get("properties")
    props = list(properties.expressions) if properties else []
    for prop in props:
        nested = prop.args.get("properties") if type(prop) is not exp.Property else None
        if isinstance(nested, exp.Properties):  # FORMAT ... ENCODE JSON (force_append_only = 'true', ...)
            props.extend(nested.expressions)
        if type(prop) is exp.Property:  # typed properties (other clauses) subclass Property too
            key, value = _key(prop.this), prop.args.get("value")
        else:
            key, value = prop.key.removesuffix("property"), prop.this
        if isinstance(value, (exp.Literal, exp.Identifier, exp.Var)):
            options[key] = value.name
        elif isinstance(value, exp.Schema | exp.Tuple):
            options[key] = ",".join(e.name for e in value.expressions)
        elif value is not None:
            options[key] = value.sql()
    if "encode" in options:  # RisingWave's FORMAT PLAIN | UPSERT | DEBEZIUM ENCODE JSON | CSV | ...
        options["changelog"] = options.pop("format", "plain").lower()  # how rows change (plain: appended)
        options["format"] = options.pop("encode").lower()  # how each row is written
    return options


def _file_source(options: dict[str, str]) -> dict[str, str]:
    """RisingWave's file sources as streamjoin's: `connector = 'posix_fs', posix_fs.root = 'dir'`
    and `connector = 's3', s3.bucket_name = 'b'` read the files of a folder (`path`), and
    `match_pattern = 'sub/*.csv'` (a glob) those of its folder whose name matches (`pattern`)."""
    import fnmatch
    import posixpath

    connector = (options.get("connector") or "").lower()
    if connector == "posix_fs" and "posix_fs.root" in options:
        options["connector"], root = "files", options.pop("posix_fs.root").rstrip("/") or "/"
    elif connector == "s3" and "s3.bucket_name" in options and "path" not in options:
        root = f"s3://{options.pop('s3.bucket_name')}"
    else:
        return options
    folder, glob = posixpath.split(options.pop("match_pattern", "*"))
    options["path"] = f"{root}/{folder}" if folder else root
    if glob not in ("", "*"):
        options["pattern"] = fnmatch.translate(glob)
    return options


def _rowtime(columns, options, watermark, where: Located, create) -> tuple[str, int]:
    names = [c.name for c in columns]
    lateness = 0
    if watermark is not None:
        rowtime = ident_name(watermark.this.this if isinstance(watermark.this, exp.Column) else watermark.this)
        delay = watermark.expression
        if isinstance(delay, exp.Sub) and isinstance(delay.expression, exp.Interval):
            lateness = interval_to_ms(delay.expression, where)
    else:
        wanted = options.get("rowtime", "")
        # the column as declared, or as its name folds (an UPPER-case profile's `sale_time`)
        rowtime = next((n for n in names if n == wanted), None) or next(
            (n for n in names if n.lower() == wanted.lower()), None) or wanted.lower() or "rowtime"
        # `rowtime = 'rowtime'` names the implicit ROWTIME (the same as leaving the option out);
        # any other name must be a declared column.
        if rowtime != "rowtime" and rowtime not in names:
            where.fail(
                f"rowtime column '{rowtime}' is not a column of this stream",
                create,
                f"columns are: {', '.join(names)}",
            )
    if "lateness" in options:
        try:
            lateness = interval_ms(options["lateness"], None)
        except ValueError as error:
            where.fail(f"bad lateness '{options['lateness']}': {error}", create, "write e.g. lateness = '10 SECONDS'")
    if "future_limit" in options:
        try:
            interval_ms(options["future_limit"], None)
        except ValueError as error:
            where.fail(f"bad future_limit '{options['future_limit']}': {error}", create,
                       "write e.g. future_limit = '1 HOUR' (rows further ahead of the wall clock are set aside)")
    return rowtime, lateness

