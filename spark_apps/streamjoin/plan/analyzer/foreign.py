"""s-Server's servers and foreign streams and tables, mapped onto streamjoin's connectors.

    CREATE OR REPLACE FOREIGN STREAM "vehicles" ("unit" BIGINT, ...)
    SERVER FILE_SERVER OPTIONS (PARSER 'CSV', DIRECTORY '/srv/test', FILENAME_PATTERN 'v.*\\.csv');

becomes `CREATE STREAM "vehicles" (...) WITH (connector = 'files', format = 'csv', path =
'/srv/test', ...)`: a file reader's folder is a `files` stream. A Kafka server is `connector =
'kafka'`, a JDBC server `connector = 'jdbc'` (PostgreSQL's URL: `connector = 'postgres'`); the
server's options come first, the stream's own after them. A connector streamjoin lacks is refused
where `run` reads the input (at its `connector` option), not here: `check` accepts the program.
"""

from __future__ import annotations

from sqlglot import exp

# s-Server's predefined servers (no CREATE SERVER needed)
PREDEFINED = {"FILE_SERVER": {"type": "FILE"}, "KAFKA10_SERVER": {"type": "KAFKA10"}, "KAFKA_SERVER": {"type": "KAFKA"},
              "SYS_JDBC": {"wrapper": "SYS_JDBC"}, "NET_SERVER": {"type": "NET"}, "AMQP10_SERVER": {"type": "AMQP10"}}
_FORMATS = {"CSV": "csv", "JSON": "json", "PARQUET": "parquet"}


def options_of(create: exp.Create) -> dict[str, str]:
    properties = create.args.get("properties")
    return {p.name.lower(): p.args["value"].name for p in (properties.expressions if properties else [])}


def as_declaration(create: exp.Create, servers: dict[str, dict[str, str]]) -> exp.Create:
    """A FOREIGN STREAM / TABLE as the CREATE STREAM / TABLE of the connector its server names."""
    own = options_of(create)
    server_name = own.pop("server", "")
    server = servers.get(server_name) or PREDEFINED.get(server_name.upper()) or {}
    merged = {**{k: v for k, v in server.items() if k not in ("type", "wrapper")}, **own}
    options = {**_connector(server_name, server, merged), **{k: v for k, v in merged.items() if k not in _MAPPED}}
    kind = "STREAM" if create.text("kind").upper().endswith("STREAM") else "TABLE"
    properties = exp.Properties(expressions=[exp.Property(this=exp.var(k), value=exp.Literal.string(v)) for k, v in options.items()])
    return exp.Create(this=create.this, kind=kind, replace=create.args.get("replace"), properties=properties)


_MAPPED = ("parser", "directory", "filename_pattern", "url", "topic", "schema_name", "table_name", "user_name", "password")


def _with_user(url: str, options: dict[str, str]) -> str:
    """The server's USER_NAME and PASSWORD in a PostgreSQL URL that names no user of its own."""
    from urllib.parse import quote, urlsplit

    parts = urlsplit(url)
    if parts.username or not options.get("user_name"):
        return url
    user = quote(options["user_name"], safe="") + (f":{quote(options['password'], safe='')}" if options.get("password") else "")
    return parts._replace(netloc=f"{user}@{parts.netloc}").geturl()


def _connector(name: str, server: dict[str, str], options: dict[str, str]) -> dict[str, str]:
    kind = (server.get("type") or server.get("wrapper") or name).upper()
    if "FILE" in kind:
        mapped = {"connector": "files", "path": options.get("directory", "")}
        if options.get("filename_pattern"):  # a Java regular expression over file names: Python's reads it
            mapped["pattern"] = options["filename_pattern"]
        if "parser" in options:
            mapped["format"] = _FORMATS.get(options["parser"].upper(), options["parser"].lower())
        return mapped
    if "KAFKA" in kind:
        return {"connector": "kafka", **({"topic": options["topic"]} if "topic" in options else {})}
    if "JDBC" in kind:
        url = options.get("url", "")
        if url.startswith("jdbc:postgresql:"):
            table = ".".join(options[k] for k in ("schema_name", "table_name") if options.get(k))
            return {"connector": "postgres", "url": _with_user(url.removeprefix("jdbc:"), options),
                    **({"table": table} if table else {})}
        return {"connector": "jdbc", "url": url}
    return {"connector": kind.lower()}
