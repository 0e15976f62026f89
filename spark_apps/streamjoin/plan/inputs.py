"""An application's inputs declared outside its SQL, as KDA configured them next to the SQL:
its input stream (`SOURCE_SQL_STREAM_001`) and its reference-data tables.

    [inputs.SOURCE_SQL_STREAM_001]
    columns = "ticker VARCHAR(4), price DOUBLE, ts TIMESTAMP"
    connector = "files"
    format = "json"
    path = "${TICKS_PATH:-data/ticks}"
    rowtime = "ts"

    [reference.COMPANIES]
    columns = "ticker VARCHAR(4) PRIMARY KEY, company VARCHAR(64)"
    connector = "files"
    format = "csv"
    path = "data/companies"

Each section becomes `CREATE STREAM "NAME" (columns) WITH (key = 'value', ...)` (`[reference.*]`:
CREATE TABLE), named exactly as written (the SQL quotes it: `"SOURCE_SQL_STREAM_001"`), and is
read before the SQL, so the SQL runs unedited. `load` takes the parsed TOML (an app's
`app.toml`, or `--config FILE`); errors name the section (docs/applications.md).
"""

from __future__ import annotations

from streamjoin.errors import SqlError

SECTIONS = {"inputs": "STREAM", "reference": "TABLE"}


def declarations(config: dict, filename: str) -> tuple[tuple[str, str], ...]:
    """(where, CREATE statement) for each `[inputs.NAME]` and `[reference.NAME]` of a config."""
    declared = []
    for section, kind in SECTIONS.items():
        entries = config.get(section, {})
        if not isinstance(entries, dict):
            raise SqlError(f"[{section}] must be a table of named {kind.lower()}s ([{section}.NAME])", filename)
        for name, entry in entries.items():
            where = f"{filename} [{section}.{name}]"
            declared.append((where, _create(kind, name, entry, where)))
    return tuple(declared)


def _create(kind: str, name: str, entry, where: str) -> str:
    if not isinstance(entry, dict):
        raise SqlError("expected a table with columns and the connector's options", where)
    columns = entry.get("columns")
    if isinstance(columns, list):
        columns = ", ".join(str(c) for c in columns)
    if not isinstance(columns, str) or not columns.strip():
        raise SqlError("no columns", where, hint='columns = "name TYPE, ..." (as in CREATE STREAM name (...))')
    options = []
    for key, value in entry.items():
        if key == "columns":
            continue
        if not key.isidentifier():
            raise SqlError(f"option '{key}' is not a name", where, hint="options are words: connector, format, path, rowtime, ...")
        if isinstance(value, bool):
            value = str(value).lower()
        if not isinstance(value, str | int | float):
            raise SqlError(f"option '{key}' must be a string or a number", where)
        text = str(value).replace("'", "''")
        options.append(f"{key} = '{text}'")
    with_ = f" WITH ({', '.join(options)})" if options else ""
    quoted = name.replace('"', '""')
    return f'CREATE {kind} "{quoted}" ({columns}){with_};'
