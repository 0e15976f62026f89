"""PostgreSQL tables read by their changes (RisingWave's `connector = 'postgres-cdc'`), through
logical replication: a changing table's input (io.sources.changelog's rows: the columns and CHANGE).

    CREATE TABLE accounts (id INT PRIMARY KEY, tier VARCHAR)
      WITH (connector = 'postgres-cdc', hostname = 'db', port = '5432', username = 'cdc',
            password = '...', database.name = 'crm', schema.name = 'public', table.name = 'accounts');

`PostgresCdcSource.poll` is what `io.sources.staging.Stager` calls instead of listing files (as it calls
io.sources.kafka's), with these guarantees:

- **first start**: a replication slot of this input's own (`pgoutput`, named from `slot.name`,
  default `streamjoin`, and a hash of the input's state folder) is created with an exported
  snapshot; the table is read in that snapshot (every row a '+' change), and its changes are read
  from the slot's consistent point on: nothing between the two is lost or read twice. The
  publication (`publication.name`, default RisingWave's `rw_publication`) is created or extended
  with the table unless `publication.create.enable = 'false'`.
- **changes**: each committed transaction's inserts and updates ('+', the row as it is now) and
  deletes ('-', by primary key), whole transactions at a time, in commit order. An update that
  changes the primary key is a '-' of the old key, then a '+'.
- **position**: the end LSN of the last *staged* transaction, in the input's manifest (saved with
  the step); the slot is advanced to it at the next poll, so the server keeps the WAL a restart
  needs and no more. A restart reads the transactions after it: no gap, no duplicate.
- **end of input** (`run --until-idle`): every change committed when the end was asked for is read;
  once the input's manifest says it ended, the slot is dropped (an ended input never reads again),
  so it holds no WAL on the server (`release`, called by the stager, again after a crash before).
  A live query that is stopped keeps its slot (and the server keeps WAL for it) until it resumes.
- **failures**: a server that does not answer is asked again with backoff for `broker_timeout`
  (default 60 s), then the input fails naming it; a slot that vanished while the query was
  stopped fails the input (its changes are gone: read the table afresh from a new checkpoint);
  a TRUNCATE, or an unchanged TOASTed value the server did not send, is a change streamjoin cannot
  apply: it fails the input, or with `on_error = 'dead_letter'` is set aside, named.

Values arrive as PostgreSQL's text output (in a UTC session) and are typed by the declared
columns, as JSON rows are.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from streamjoin.io.sources.log_merge import ARRIVED
from streamjoin.io.sources.pgoutput import Decoder, lsn_order, typed

log = logging.getLogger("streamjoin.pg_cdc")

URL_ENV = "STREAMJOIN_CDC_URL"  # postgresql://user:pw@host:port[/db]: replaces every program's server (docs/dialects/risingwave.md)
CHANGES_PER_POLL = 100_000  # a poll's memory is bounded (whole transactions: the last may go past it)


class CdcUnavailableError(RuntimeError):
    """The server did not answer for broker_timeout, or cannot serve the slot (not retried again)."""


def connection(options: dict, env=None) -> dict:
    """psycopg2.connect's arguments from the declaration's hostname, port, username, password and
    database.name; STREAMJOIN_CDC_URL, when set, replaces the server (and the database if it names
    one). A password given as `secret name` (RisingWave's CREATE SECRET) is left to libpq
    (PGPASSWORD, ~/.pgpass)."""
    env = os.environ if env is None else env
    kwargs = {"host": options.get("hostname") or "127.0.0.1", "port": int(options.get("port") or 5432),
              "user": options.get("username") or "postgres", "dbname": options.get("database.name") or "postgres"}
    password = options.get("password")
    if password and not password.startswith("secret "):
        kwargs["password"] = password
    if env.get(URL_ENV):
        url = urlsplit(env[URL_ENV])
        kwargs.update({k: v for k, v in (("host", url.hostname), ("port", url.port), ("user", url.username and unquote(url.username)),
                                         ("password", url.password and unquote(url.password))) if v})
        if url.path.strip("/"):
            kwargs["dbname"] = unquote(url.path.strip("/"))
    kwargs["connect_timeout"] = 5
    return kwargs


def slot_name(prefix: str | None, state_dir: str) -> str:
    """The input's own slot: the declared `slot.name` (or 'streamjoin') and a hash of its state
    folder, so two queries (or two tables of one shared source) never read one slot."""
    digest = hashlib.sha1(os.path.abspath(state_dir).encode()).hexdigest()[:10]
    base = "".join(ch if ch.isascii() and ch.isalnum() or ch == "_" else "_" for ch in (prefix or "streamjoin").lower())
    return f"{base[:50]}_{digest}"


class PostgresCdcSource:
    """Reads one table's changes for one input (see the module docstring)."""

    @classmethod
    def from_spec(cls, spec, parse) -> PostgresCdcSource:
        """The reader of a postgres-cdc input (io.connectors)."""
        return cls(spec.cdc, parse, spec.on_error)

    def __init__(self, options: dict, parse, on_error: str = "fail"):
        """`options`: connection (psycopg2.connect's arguments), schema, table, columns (the declared
        names, CHANGE excluded), key (the primary key), slot, publication, create_publication,
        broker_timeout_ms, arrival (the rowtime is the instant a row is read); `parse(datas, fills,
        where)` as for io.sources.kafka."""
        self.options = options
        self.conn_args = options["connection"]
        self.schema, self.table = options.get("schema") or "public", options["table"]
        self.columns = list(options["columns"])
        self.key = list(options.get("key") or [])
        self.slot = options["slot"]
        self.publication = options.get("publication") or "rw_publication"
        self.timeout_s = options.get("broker_timeout_ms", 60_000) / 1000
        self.parse = parse
        self.on_error = on_error
        self.rejected: list[dict] = []
        self.where = f"postgres-cdc://{self.conn_args['host']}:{self.conn_args['port']}/{self.conn_args['dbname']}/{self.schema}.{self.table}"
        self.conn = None
        self.rowtime: str | None = None

    # ------------------------------------------------------------------ reading

    def poll(self, positions: dict, rowtime: str, ending: bool, first_start_us: int) -> tuple[pa.Table | None, dict]:
        """Read what is new; return (the rows to stage now, or None; the new positions)."""
        self.rowtime = rowtime
        self.slot = positions.get("slot") or self.slot  # the slot it made, wherever the checkpoint is now
        if not positions.get("lsn"):
            table, lsn = self._call("read the table and create its replication slot", self._first_read)
            positions = {"lsn": lsn, "slot": self.slot}
            if not ending:
                return table, positions
            later, positions = self._changes(positions, ending)
            return _concat(table, later), positions
        return self._changes(positions, ending)

    def _changes(self, positions: dict, ending: bool) -> tuple[pa.Table | None, dict]:
        """The transactions committed after the staged position: one read's worth, or, when
        ending, every one committed before the end was asked for."""
        staged = positions["lsn"]
        until = self._call("read the server's WAL position", self._current_lsn) if ending else None
        rows, lsn = self._call("read the slot's changes", lambda: self._peek(staged, until))
        return rows, {**positions, "lsn": lsn}

    def _current_lsn(self) -> str:
        cur = self._cursor()
        cur.execute("SELECT pg_current_wal_lsn()::text")
        return cur.fetchone()[0]

    def _peek(self, staged: str, until: str | None = None) -> tuple[pa.Table | None, str]:
        """One read of the slot after `staged`, the manifest's saved position: the slot is advanced
        there and never further, so a crash before the next save reads the same transactions again.
        Without `until`, up to CHANGES_PER_POLL changes (whole transactions); with it (the end of
        input), every transaction committed before it. (this table's changes as rows, or None; the
        end LSN of the last transaction read, `staged` if none)."""
        cur = self._cursor()
        cur.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", (self.slot,))
        found = cur.fetchone()
        if found is None:
            raise CdcUnavailableError(
                f"{self.where}: replication slot '{self.slot}' is gone (dropped while the query was stopped?): the changes "
                f"after LSN {staged} cannot be read again; start the query with a new checkpoint to read the table afresh")
        confirmed = found[0]
        if confirmed is not None and lsn_order(confirmed) > lsn_order(staged):
            raise CdcUnavailableError(
                f"{self.where}: replication slot '{self.slot}' is at LSN {confirmed}, past the LSN {staged} this query staged "
                "last: the changes between were consumed by another reader of the slot; start the query with a new "
                "checkpoint to read the table afresh")
        if confirmed is None or lsn_order(staged) > lsn_order(confirmed):
            cur.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (self.slot, staged))
        cur.execute("SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, %s, 'proto_version', '1', "
                    "'publication_names', %s)", (self.slot, until, None if until else CHANGES_PER_POLL, _quoted(self.publication)))
        changes, bad, lsn = [], [], staged
        decoder = Decoder({(self.schema, self.table): self.key})
        for at, data in cur.fetchall():
            for end in decoder.feed(bytes(data), at):
                if lsn_order(end) > lsn_order(staged):  # a transaction staged before is skipped (a crash before the advance)
                    changes += decoder.taken
                    bad += decoder.bad
                    lsn = end
                decoder.taken, decoder.bad = [], []
        for schema, table, reason, what in bad:
            if (schema, table) != (self.schema, self.table):
                continue
            if self.on_error != "dead_letter":
                raise ValueError(f"{self.where}: {reason}")
            from streamjoin.io.sources.rejects import dead_letter

            self.rejected.append(dead_letter(None, self.where, None, what, reason, sequence=lsn.replace("/", "-")))
        mine = [(row, ts) for (schema, table, row, ts) in changes if (schema, table) == (self.schema, self.table)]
        if not mine:
            return None, lsn
        return self._rows([r for r, _ in mine], [t for _, t in mine]), lsn

    def _first_read(self) -> tuple[pa.Table, str]:
        """Create the slot with an exported snapshot and read the table in that snapshot."""
        import psycopg2
        import psycopg2.extras
        from psycopg2 import sql

        cur = self._cursor()
        columns = self._check_table(cur)
        self._publish(cur)
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (self.slot,))
        replication = psycopg2.connect(connection_factory=psycopg2.extras.LogicalReplicationConnection, **self.conn_args)
        try:
            rcur = replication.cursor()
            rcur.execute(f"CREATE_REPLICATION_SLOT {self.slot} LOGICAL pgoutput EXPORT_SNAPSHOT")
            _, consistent, snapshot, _ = rcur.fetchone()
            reader = psycopg2.connect(**self.conn_args)
            try:
                with reader.cursor() as rc:
                    rc.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    rc.execute("SET TRANSACTION SNAPSHOT %s", (snapshot,))
                    rc.execute("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'; SET LOCAL extra_float_digits = 1")
                    rc.execute(sql.SQL("SELECT {} FROM {}.{}").format(
                        sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns),
                        sql.Identifier(self.schema), sql.Identifier(self.table)))
                    got = rc.fetchall()
                    types = self._types(rc, columns)
                reader.rollback()
            finally:
                reader.close()
        finally:
            replication.close()
        rows = [dict(typed(dict(zip(columns, values, strict=True)), types), __change="+") for values in got]
        log.info("%s: read %d rows in the slot's snapshot (slot '%s' at LSN %s)", self.where, len(rows), self.slot, consistent)
        return self._rows(rows, [None] * len(rows)), consistent

    def _check_table(self, cur) -> list[str]:
        """The declared columns, as the table names them (a missing one is an error, named)."""
        cur.execute("SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
                    (f'"{self.schema}"."{self.table}"',))
        have = [r[0] for r in cur.fetchall()]
        if not have:
            raise CdcUnavailableError(f"{self.where}: the table does not exist")
        missing = [c for c in self.columns if c not in have]
        if missing:
            raise CdcUnavailableError(f"{self.where}: the table has no column {', '.join(missing)} (it has {', '.join(have)})")
        return self.columns

    def _types(self, cur, columns: list[str]) -> dict:
        cur.execute("SELECT attname, atttypid FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0",
                    (f'"{self.schema}"."{self.table}"',))
        return {name: oid for name, oid in cur.fetchall() if name in columns}

    def _publish(self, cur) -> None:
        """The publication holds the table (created or extended, unless told not to)."""
        from psycopg2 import sql

        table = sql.SQL("{}.{}").format(sql.Identifier(self.schema), sql.Identifier(self.table))
        cur.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", (self.publication,))
        found = cur.fetchone()
        if found is not None:
            if found[0]:
                return
            cur.execute("SELECT 1 FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s AND tablename = %s",
                        (self.publication, self.schema, self.table))
            if cur.fetchone():
                return
        if not self.options.get("create_publication", True):
            raise CdcUnavailableError(f"{self.where}: publication '{self.publication}' does not publish the table, and "
                                      "publication.create.enable = 'false': add it (ALTER PUBLICATION ... ADD TABLE)")
        if found is None:
            cur.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(sql.Identifier(self.publication), table))
        else:
            cur.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLE {}").format(sql.Identifier(self.publication), table))

    def _rows(self, rows: list[dict], commit_us: list) -> pa.Table:
        now = int(time.time() * 1_000_000)
        fills = {ARRIVED: [now] * len(rows)}
        if self.rowtime:  # not an arrival-ordered input: the rowtime a row does not hold is its commit's instant
            fills["?" + self.rowtime] = [t if t is not None else now for t in commit_us]
        datas = [json.dumps(r, default=str).encode() for r in rows]
        return self.parse(datas, fills, self.where)

    # ------------------------------------------------------------------ the server

    def _cursor(self):
        import psycopg2

        if self.conn is None or self.conn.closed:
            self.conn = psycopg2.connect(**self.conn_args)
            self.conn.autocommit = True
            with self.conn.cursor() as cur:
                cur.execute("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 1")
        return self.conn.cursor()

    def _call(self, doing: str, call):
        """A call to the server, asked again with backoff until broker_timeout; then a clear failure."""
        import psycopg2

        deadline, delay = time.time() + self.timeout_s, 0.5
        while True:
            try:
                return call()
            except psycopg2.OperationalError as error:
                reason = " ".join(str(error).split())
                if self.conn is not None:
                    self.conn.close()
                if time.time() + delay > deadline:
                    raise CdcUnavailableError(f"{self.where}: could not {doing} for {self.timeout_s:.0f} s: {reason}") from None
                log.warning("%s: could not %s (%s): asking again in %.1f s", self.where, doing, reason, delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
            except psycopg2.Error as error:
                raise CdcUnavailableError(f"{self.where}: could not {doing}: {' '.join(str(error).split())}") from None

    def release(self) -> None:
        """Drop the slot: called once the input's manifest says it ended (saved), so the server keeps
        no WAL for an input that never reads again (io.sources.staging; again after a crash before it)."""
        self._call("drop its replication slot", lambda: self._cursor().execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (self.slot,)))
        log.info("%s: the input ended: replication slot '%s' dropped", self.where, self.slot)

    def close(self) -> None:
        """Leave the server (the slot stays: a stopped query resumes from it)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _quoted(name: str) -> str:
    """A publication's name for pgoutput's publication_names (a list of identifiers: quoted, its case kept)."""
    return '"' + name.replace('"', '""') + '"'


def _concat(*tables) -> pa.Table | None:
    kept = [t for t in tables if t is not None]
    return pa.concat_tables(kept) if kept else None
