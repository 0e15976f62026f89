"""Kinesis Data Streams as a stream input (connector 'kinesis'), staged like files.

    CREATE STREAM orders (id INT, ts TIMESTAMP) WITH (connector = 'kinesis', stream = 'orders',
      start = 'trim_horizon', format = 'json', rowtime = 'ts', lateness = '5 SECONDS');

Each record's data is one JSON object (a row, or a rowtime bound `{"rowtime": ..., "_bound":
true}`). `approximate_arrival` (TIMESTAMP) is a column of every Kinesis stream, the record's
ApproximateArrivalTimestamp, and may be its rowtime. The client is boto3's, configured by the
standard AWS_* variables (AWS_ENDPOINT_URL_KINESIS or AWS_ENDPOINT_URL: the embedded server).

`KinesisSource.poll` is what `io.sources.staging.Stager` calls instead of listing files:

- **positions**: per shard, the sequence number of the last record *staged* (in the input's
  manifest, written with the step), so a restart resumes after it: no gap, no duplicate. Records
  read but not staged yet are read again after a restart.
- **shards**: listed on every poll; a shard is read once its parents are done (a split's or a
  merge's parents drained before their children); a shard is done when it is closed and read to
  its end. `start` applies to shards without a parent: trim_horizon, latest (fixed as "the first
  start's instant" in the manifest, so a restart does not skip what came meanwhile) or
  at_timestamp (`start_timestamp`).
- **the input's clock is the slowest shard's**: a record is staged once every shard that is
  still delivering has reached its rowtime (shards are merged by rowtime, each shard's own order
  kept); a shard that is caught up and silent for `idle_timeout` (default 10 s) no longer holds
  the others back. So a fast shard does not make a slow shard's rows late.
- **end of input** (`run --until-idle`): every shard is read until it is caught up (no records,
  nothing behind the tip); then everything held is staged and the input ends.
- throttling (ProvisionedThroughputExceeded, LimitExceeded) and expired iterators are retried
  with backoff.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import pyarrow as pa

from streamjoin.io.sources.log_merge import ARRIVED, Part, RowtimeMerge

log = logging.getLogger("streamjoin.kinesis")

ARRIVAL = "approximate_arrival"
STARTS = ("trim_horizon", "latest", "at_timestamp")
RECORDS_PER_CALL = 10_000
RECORDS_PER_POLL = 200_000  # per shard and poll: a poll's memory is bounded
RETRYABLE = ("ProvisionedThroughputExceededException", "LimitExceededException", "ThrottlingException")


def is_kinesis(path: str) -> bool:
    return path.startswith("kinesis://")


def settings_from_env(env=None) -> dict:
    env = os.environ if env is None else env
    return {
        "endpoint_url": env.get("AWS_ENDPOINT_URL_KINESIS") or env.get("AWS_ENDPOINT_URL") or None,
        "access_key": env.get("AWS_ACCESS_KEY_ID") or None,
        "secret_key": env.get("AWS_SECRET_ACCESS_KEY") or None,
        "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
    }


def client(settings: dict | None = None):
    import boto3

    s = settings or settings_from_env()
    return boto3.client("kinesis", endpoint_url=s["endpoint_url"], aws_access_key_id=s["access_key"],
                        aws_secret_access_key=s["secret_key"], region_name=s["region"])


@dataclass
class _Shard(Part):
    parents: tuple[str, ...] = ()
    closed: bool = False
    iterator: str | None = None


class KinesisSource(RowtimeMerge):
    """Reads one Kinesis stream for one input (see the module docstring)."""

    @classmethod
    def from_spec(cls, spec, parse) -> KinesisSource:
        """The reader of a Kinesis input (io.connectors)."""
        return cls({**spec.kinesis, "changelog": spec.changelog}, spec.storage, parse, spec.on_error)

    def __init__(self, options: dict, storage: dict | None, parse, on_error: str = "fail"):
        """`options`: stream, start, start_timestamp (µs), idle_ms; `parse(datas, fills, where)`
        turns record data into a conformed Arrow table (one row per record, the rowtime column
        filled), raising on a malformed record. `on_error`: 'fail' (such a record fails the
        input) or 'dead_letter' (it is set aside in `rejected`, for the stager to write)."""
        self.on_error = on_error
        self.rejected: list[dict] = []  # records that could not be read, not yet written
        self.stream = options["stream"]
        self.start = options.get("start", "trim_horizon")
        self.start_us = options.get("start_timestamp_us")
        self.idle_ms = options.get("idle_ms", 10_000)
        self.fills = options.get("fills") or {}  # RisingWave's INCLUDE columns: {column: key | partition | offset | timestamp | payload}
        self.changelog = options.get("changelog")  # "debezium": each record a Debezium event (a table fed by its changes)
        self.parse = parse
        self.client = client(storage)
        self.parts: dict[str, _Shard] = {}
        self.rows: pa.Table | None = None  # held rows (rows not staged yet), in read order per shard
        self.rowtime: str | None = None

    # ------------------------------------------------------------------ reading

    def poll(self, positions: dict, rowtime: str, ending: bool, first_start_us: int) -> tuple[pa.Table | None, dict]:
        """Read what is new; return (the rows to stage now in merged order, or None; the new
        positions). `positions`: shard -> {"seq": last staged, "done": bool, "top_us": ...}
        (the manifest's). `ending`: read until every shard is caught up, then release all."""
        self.rowtime = rowtime
        new: list[pa.Table] = []
        quiet = 0  # at the end of input: passes in a row that found nothing (two end it)
        while True:
            self._list(positions)
            got = self._read_all(positions, first_start_us, new)
            unread = [s for s in self.parts.values()
                      if not self._done(s, positions) and self._ready(s, positions) and not s.caught_up]
            quiet = 0 if got or unread else quiet + 1
            # a shard that became readable in this pass (a split's children, once their parent is
            # done) gets one more pass before the input ends: its first read may come back empty
            if not ending or quiet >= 2:
                break
        if new:
            self.hold(new)
        release, staged = self.release(everything=ending)
        return release, self.next_positions(positions, staged)

    def close(self) -> None:
        """Nothing to leave: boto3's client holds no connection that outlives a call."""

    def _list(self, positions: dict) -> None:
        shards, token = [], None
        while True:
            kwargs = {"NextToken": token} if token else {"StreamName": self.stream}
            page = self._call(self.client.list_shards, **kwargs)
            shards += page.get("Shards", [])
            token = page.get("NextToken")
            if not token:
                break
        for s in shards:
            closed = "EndingSequenceNumber" in s.get("SequenceNumberRange", {})
            if s["ShardId"] in self.parts:
                self.parts[s["ShardId"]].closed = closed
                continue
            parents = tuple(p for p in (s.get("ParentShardId"), s.get("AdjacentParentShardId")) if p)
            shard = _Shard(s["ShardId"], parents=parents, closed=closed)
            shard.read_pos = positions.get(s["ShardId"], {}).get("seq")
            shard.top_us = positions.get(s["ShardId"], {}).get("top_us")
            self.parts[s["ShardId"]] = shard

    def _done(self, shard: _Shard, positions: dict) -> bool:
        """Read to its end (closed, nothing left), in this process or before a restart."""
        return shard.finished or bool(positions.get(shard.id, {}).get("done"))

    def _ready(self, shard: _Shard, positions: dict) -> bool:
        """Its parents are done (or expired: no longer listed): a child is read after them."""
        return all(p not in self.parts or self._done(self.parts[p], positions) for p in shard.parents)

    def _read_all(self, positions: dict, first_start_us: int, out: list) -> bool:
        """One pass over the shards that can be read; True if any record came."""
        got = False
        for shard in sorted(self.parts.values(), key=lambda s: s.id):  # parents sort before children
            if self._done(shard, positions) or not self._ready(shard, positions):
                continue
            records, behind = self._read(shard, first_start_us)
            if records:
                got = True
                table, sequences = self._parse(shard, records)
                out.append(self.tagged(table, shard, sequences))
            shard.caught_up = not records and not behind
            shard.quiet_since = (shard.quiet_since or time.time()) if shard.caught_up else None
            shard.finished = shard.finished or (shard.caught_up and shard.closed)
        return got

    def _parse(self, shard: _Shard, records: list) -> tuple[pa.Table, list[str]]:
        """(the records as rows, each row's sequence number); a malformed record fails the input,
        naming its shard and sequence number, or, with on_error 'dead_letter', is set aside."""
        import json

        where = f"kinesis://{self.stream}/{shard.id}"
        if self.changelog == "debezium":
            records = self._as_changes(where, records)
        try:
            return (self.parse([r["Data"] for r in records], self._fills(records, shard.id), where),
                    [r["SequenceNumber"] for r in records])
        except (ValueError, pa.ArrowException) as error:
            if self.on_error == "dead_letter":
                return self._parse_each(where, records, shard.id)
            for r in records:
                try:
                    if not isinstance(json.loads(r["Data"]), dict):
                        raise ValueError("not a JSON object")
                except ValueError as bad:
                    raise ValueError(f"{where}: the record with sequence number {r['SequenceNumber']} is not a JSON object: "
                                     f"{str(bad).splitlines()[0]}") from None
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(reason if reason.startswith(where) else f"{where}: {reason}") from None

    def _as_changes(self, where: str, records: list) -> list:
        """FORMAT DEBEZIUM: each record's data as the row its event changes, with its CHANGE
        (io.sources.changelog, as a Debezium file's lines); a record that is not a Debezium event fails the
        input naming its shard and sequence number, or with on_error 'dead_letter' is set aside."""
        import json

        from streamjoin.io.sources.changelog import read_debezium
        from streamjoin.io.sources.rejects import dead_letter

        out = []
        for r in records:
            rows, rejected = read_debezium(r["Data"], where, None)
            if rejected:
                reason = rejected[0]["reason"]
                if self.on_error != "dead_letter":
                    raise ValueError(f"{where}: the record with sequence number {r['SequenceNumber']}: {reason}")
                self.rejected.append(dead_letter(None, where, None, r["Data"], reason, sequence=r["SequenceNumber"]))
            out += [{**r, "Data": json.dumps(row, default=str).encode()} for row in rows]
        return out

    def _fills(self, records: list, shard: str) -> dict:
        """The columns the records' metadata fill (io.sources.staging's parse): their arrival instant (µs),
        and the INCLUDE columns (RisingWave's key, partition, offset, timestamp, payload)."""
        arrived = [int(r["ApproximateArrivalTimestamp"].timestamp() * 1_000_000) for r in records]
        fills = {ARRIVED: arrived, ARRIVAL: arrived}
        for column, what in self.fills.items():
            fills[column] = [_metadata(r, what, shard, t) for r, t in zip(records, arrived, strict=True)]
        return fills

    def _parse_each(self, where: str, records: list, shard: str = "") -> tuple[pa.Table, list[str]]:
        """The records that read, one at a time; each other one becomes a dead letter naming its
        shard and sequence number (io/sources/rejects.py's record, `sequence` for `line`)."""
        from streamjoin.io.sources.rejects import dead_letter

        tables, kept = [], []
        for r in records:
            try:
                tables.append(self.parse([r["Data"]], self._fills([r], shard), where))
                kept.append(r)
            except (ValueError, pa.ArrowException) as error:
                reason = (str(error).splitlines()[0] if str(error) else type(error).__name__).removeprefix(f"{where}: ")
                self.rejected.append(dead_letter(None, where, None, r["Data"], reason, sequence=r["SequenceNumber"]))
        table = pa.concat_tables(tables) if tables else self.parse([], self._fills([], shard), where)
        return table, [r["SequenceNumber"] for r in kept]

    def _read(self, shard: _Shard, first_start_us: int) -> tuple[list, bool]:
        """Records after `read_pos` (up to RECORDS_PER_POLL); and whether the shard is behind its tip."""
        records: list = []
        behind = False
        while len(records) < RECORDS_PER_POLL:
            if shard.iterator is None:
                shard.iterator = self._iterator(shard, first_start_us)
            try:
                page = self._call(self.client.get_records, ShardIterator=shard.iterator, Limit=RECORDS_PER_CALL)
            except self.client.exceptions.ExpiredIteratorException:
                shard.iterator = None  # made again from the last record read
                continue
            batch = page.get("Records", [])
            if batch:
                records += batch
                shard.read_pos = batch[-1]["SequenceNumber"]
            shard.iterator = page.get("NextShardIterator")
            behind = (page.get("MillisBehindLatest") or 0) > 0
            if shard.iterator is None:  # closed and read to its end
                shard.closed = shard.finished = True
                return records, False
            if not batch and not behind:
                return records, False
        return records, True

    def _iterator(self, shard: _Shard, first_start_us: int) -> str:
        kwargs = {"StreamName": self.stream, "ShardId": shard.id}
        if shard.read_pos is not None:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=shard.read_pos)
        elif shard.parents and any(p in self.parts for p in shard.parents):
            kwargs.update(ShardIteratorType="TRIM_HORIZON")  # a child: everything after its parents
        elif self.start == "trim_horizon":
            kwargs.update(ShardIteratorType="TRIM_HORIZON")
        else:
            at_us = self.start_us if self.start == "at_timestamp" else first_start_us
            kwargs.update(ShardIteratorType="AT_TIMESTAMP", Timestamp=at_us / 1_000_000)
        return self._call(self.client.get_shard_iterator, **kwargs)["ShardIterator"]

    def _call(self, method, **kwargs):
        """A call retried with backoff while Kinesis throttles."""
        from botocore.exceptions import ClientError

        delay = 0.1
        for attempt in range(10):
            try:
                return method(**kwargs)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") not in RETRYABLE or attempt == 9:
                    raise
                log.info("kinesis %s throttled: retrying in %.1f s", self.stream, delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")


def _metadata(record: dict, what: str, shard: str, arrived_us: int):
    """One INCLUDE column's value: the partition key (RisingWave's `key`, bytes), the shard, the
    sequence number, the arrival instant, or the record's data as text (`payload`)."""
    if what == "key":
        return record["PartitionKey"]
    if what == "partition":
        return shard
    if what == "offset":
        return record["SequenceNumber"]
    if what == "timestamp":
        return arrived_us
    if what == "payload":
        return bytes(record["Data"]).decode("utf-8", errors="replace")
    return None


# ---------------------------------------------------------------------- producing (demos, tests)


def put(stream: str, lines: list[bytes], key: str | None = None, shards: int | None = None, settings: dict | None = None,
        report=None) -> int:
    """Put JSON Lines as records, in order (PutRecords, 500 at a time; failed records are sent
    again, in order). The partition key is the field `key` of each row, else its line number.
    `shards`: create the stream with that many shards when it does not exist. A rowtime bound
    is a line like any other: `{"rowtime": "...", "_bound": true}`. Returns the records put."""
    import json

    kinesis = client(settings)
    if shards is not None:
        try:
            kinesis.create_stream(StreamName=stream, ShardCount=shards)
            kinesis.get_waiter("stream_exists").wait(StreamName=stream, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100})
        except kinesis.exceptions.ResourceInUseException:
            pass  # it exists: put into it
    entries = []
    for n, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise ValueError(f"line {n + 1}: not JSON: {error}") from None
        partition = str(row.get(key)) if key and isinstance(row, dict) and row.get(key) is not None else str(n)
        entries.append({"Data": line, "PartitionKey": partition})
    sent = 0
    for i in range(0, len(entries), 500):
        batch = entries[i:i + 500]
        delay = 0.1
        while batch:
            result = kinesis.put_records(StreamName=stream, Records=batch)
            failed = [e for e, r in zip(batch, result["Records"], strict=True) if r.get("ErrorCode")]
            sent += len(batch) - len(failed)
            if failed and failed != batch[-len(failed):]:
                # a record after a failed one went in: the order within a partition key is kept
                # only for records sent after the failure too, which is what Kinesis gives
                log.warning("kinesis %s: %d records throttled, sent again", stream, len(failed))
            batch = failed
            if batch:
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        if report is not None:
            report(sent)
    return sent
