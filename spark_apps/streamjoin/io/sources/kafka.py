"""Kafka topics as a stream input (connector 'kafka'), staged like files (io.storage.kafka_broker: the
embedded broker, and putting records for demos and tests).

    CREATE SOURCE orders (id INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
      WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = 'broker:9092',
            scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON;

Each record's value is one JSON object (a row, or a rowtime bound `{"rowtime": ..., "_bound":
true}`); with FORMAT DEBEZIUM a Debezium change event, with FORMAT UPSERT a row keyed by the
record's key (a record without a value deletes the key's row). A record's metadata fills the
columns that ask for it (`fills`: RisingWave's INCLUDE key | partition | offset | timestamp |
header 'h', Lenses' `_key`); an implicit ROWTIME the value does not hold is the record's
timestamp. The client is confluent-kafka's (librdkafka); partitions are *assigned*, never
subscribed (no consumer group, no committed offsets: the positions live in the manifest).

`KafkaSource.poll` is what `io.sources.staging.Stager` calls instead of listing files, with the
guarantees of the Kinesis input (io.sources.kinesis, io.sources.log_merge):

- **positions**: per partition the offset of the last record *staged* (in the input's manifest,
  written with the step), so a restart resumes after it: no gap, no duplicate.
- **partitions**: listed on every poll; a partition added later is read from its beginning.
  `start`: earliest, latest (the end offsets at the first start, saved in the manifest at once)
  or timestamp (`start_timestamp_us`: the records from that instant on, by record timestamp).
- **the input's clock is the slowest partition's**, with `idle_ms` (default 10 s) for a caught-up,
  silent partition.
- **end of input** (`run --until-idle`): every partition is read to its end (the broker's
  end-of-partition event), then everything held is staged and the input ends.
- **a broker that does not answer** is asked again with backoff for `broker_timeout_ms` (default
  60 s), each retry logged; then the input fails naming the broker and what it said.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import pyarrow as pa

from streamjoin.io.sources.log_merge import ARRIVED, Part, RowtimeMerge
from streamjoin.io.storage.kafka_client import consumer

log = logging.getLogger("streamjoin.kafka")

STARTS = ("earliest", "latest", "timestamp")
RECORDS_PER_POLL = 200_000  # per poll, all partitions: a poll's memory is bounded
READ_S = 0.2  # a read's longest stretch: what keeps arriving waits for the next poll
class BrokerUnavailableError(RuntimeError):
    """The broker did not answer for broker_timeout (already retried: not retried again)."""


@dataclass
class _Partition(Part):
    number: int = 0
    assigned: bool = False
    at_end: bool = False  # the last event of this partition was its end-of-partition


class KafkaSource(RowtimeMerge):
    """Reads one Kafka topic for one input (see the module docstring)."""

    @classmethod
    def from_spec(cls, spec, parse) -> KafkaSource:
        """The reader of a Kafka input (io.connectors)."""
        return cls(spec.kafka, parse, spec.on_error)

    def __init__(self, options: dict, parse, on_error: str = "fail"):
        """`options`: bootstrap, topic, start, start_timestamp_us, idle_ms, broker_timeout_ms,
        fills ({column: metadata}; a column name starting with '?' is filled only where the value
        left it NULL), changelog (None, 'debezium' or 'upsert'); `parse(datas, fills, where)` as
        for io.sources.kinesis. `on_error`: 'fail' or 'dead_letter'."""
        self.options = options
        self.topic = options["topic"]
        self.servers = options["bootstrap"]
        self.start = options.get("start", "earliest")
        self.start_us = options.get("start_timestamp_us")
        self.idle_ms = options.get("idle_ms", 10_000)
        self.timeout_s = options.get("broker_timeout_ms", 60_000) / 1000
        self.call_s = min(5.0, max(0.5, self.timeout_s / 4))  # one request's wait: several fit in the timeout
        self.fills = options.get("fills") or {}
        self.changelog = options.get("changelog")
        self.parse = parse
        self.on_error = on_error
        self.rejected: list[dict] = []
        self.errors: list = []  # the client's errors since the last successful call (error_cb)
        self.missing_said = False  # the topic's absence was logged
        self.client = consumer(self.servers, self.errors)
        self.parts: dict[str, _Partition] = {}
        self.rows: pa.Table | None = None
        self.rowtime: str | None = None

    # ------------------------------------------------------------------ reading

    def poll(self, positions: dict, rowtime: str, ending: bool, first_start_us: int) -> tuple[pa.Table | None, dict]:
        """Read what is new; return (the rows to stage now in merged order, or None; the new
        positions), as io.sources.kinesis does."""
        self.rowtime = rowtime
        self._list(positions, first_start_us)
        if ending:
            self._recheck_ends()
        new: list[pa.Table] = []
        deadline = time.time() + self.timeout_s
        while True:
            got = self._read(new)
            if not ending or all(p.at_end for p in self.parts.values()):
                break
            if got:
                deadline = time.time() + self.timeout_s
            elif time.time() > deadline:
                self._fail("did not deliver the rest of the topic")
        if new:
            self.hold(new)
        release, staged = self.release(everything=ending)
        return release, self.next_positions(positions, staged)

    def _list(self, positions: dict, first_start_us: int) -> None:
        """The topic's partitions; each new one assigned at its starting offset."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        # all topics: a request for one topic by name makes some brokers (Tansu) create it
        topic = self._call("list the topic's partitions", lambda: self.client.list_topics(timeout=self.call_s).topics.get(self.topic))
        if topic is None:  # not created yet: nothing to read (said once: a misspelt name reads nothing too)
            if not self.missing_said:
                log.warning("kafka %s: topic '%s' does not exist (yet): nothing is read from it until it does",
                            self.servers, self.topic)
                self.missing_said = True
            return
        if topic.error is not None:
            if topic.error.code() == 3:  # UNKNOWN_TOPIC_OR_PART: not created yet: nothing to read
                return
            self._fail(f"topic '{self.topic}': {topic.error.str()}")
        first = not positions  # the first start: `start` applies to every partition there is
        adding = []
        for number in sorted(topic.partitions):
            pid = str(number)
            if pid in self.parts:
                continue
            part = _Partition(pid, number=number)
            state = positions.get(pid, {})
            part.read_pos, part.top_us = state.get("seq"), state.get("top_us")
            if part.read_pos is not None:
                offset = int(part.read_pos) + 1
            elif self.start == "latest" and first:
                offset = self._end_offset(number)
                part.read_pos = str(offset - 1) if offset else None
            elif self.start == "timestamp":
                offset = self._offset_at(number, self.start_us)
            else:
                offset = OFFSET_BEGINNING
            self.parts[pid] = part
            adding.append(TopicPartition(self.topic, number, offset))
        if adding:
            self.client.incremental_assign(adding)
            for tp in adding:
                self.parts[str(tp.partition)].assigned = True

    def _recheck_ends(self) -> None:
        """A partition whose end event came in an earlier poll is at its end only if the broker
        holds nothing after what was read: a record that came since must be read before the
        input ends (the end event of a fetch not yet made would say so too late)."""
        from confluent_kafka import TopicPartition

        for part in self.parts.values():
            if not part.at_end:
                continue
            position = self.client.position([TopicPartition(self.topic, part.number)])[0].offset
            if position >= 0 and self._end_offset(part.number) > position:
                part.at_end = False

    def _end_offset(self, number: int) -> int:
        from confluent_kafka import TopicPartition

        return self._call("read the end offsets",
                          lambda: self.client.get_watermark_offsets(TopicPartition(self.topic, number), timeout=self.call_s, cached=False))[1]

    def _offset_at(self, number: int, at_us: int) -> int:
        """A first offset at or before the instant (records before it are skipped by timestamp)."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        found = self._call("find offsets by time",
                           lambda: self.client.offsets_for_times([TopicPartition(self.topic, number, at_us // 1000)], timeout=self.call_s))
        offset = found[0].offset
        return offset if offset >= 0 else OFFSET_BEGINNING if offset == -2 else self._end_offset(number)

    def _read(self, out: list) -> bool:
        """One read of what the assigned partitions have (up to RECORDS_PER_POLL, for up to
        READ_S); True if any record came. A partition is caught up once its end-of-partition event
        came last."""
        from confluent_kafka import KafkaError

        records: dict[str, list] = {}
        count, empty = 0, 0
        until = time.time() + READ_S  # records that keep coming must not keep the read from ending
        while count < RECORDS_PER_POLL and empty < 2 and time.time() < until:
            batch = self.client.consume(num_messages=10_000, timeout=0.2)
            if not batch:
                if all(p.at_end for p in self.parts.values()):
                    break
                empty += 1
                continue
            empty = 0
            for msg in batch:
                error = msg.error()
                part = self.parts.get(str(msg.partition())) if msg.partition() is not None else None
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF and part is not None:
                        part.at_end = True
                    elif error.fatal():
                        self._fail(error.str())
                    continue
                if part is None:
                    continue
                part.at_end = False
                records.setdefault(part.id, []).append(msg)
                count += 1
        self.errors.clear()
        for part in self.parts.values():
            got = records.get(part.id, [])
            if got:
                part.read_pos = str(got[-1].offset())
                table, offsets = self._parse(part, got)
                if table.num_rows:
                    out.append(self.tagged(table, part, offsets))
            part.caught_up = part.at_end
            # caught up and silent since its last record came (or since it was first seen caught up)
            part.quiet_since = None if not part.at_end else time.time() if got else (part.quiet_since or time.time())
        return count > 0

    def _parse(self, part: _Partition, msgs: list) -> tuple[pa.Table, list[str]]:
        """(the records as rows, each row's offset); a malformed record fails the input, naming
        its partition and offset, or, with on_error 'dead_letter', is set aside."""
        where = f"kafka://{self.topic}/{part.id}"
        kept, datas, bad = [], [], []
        for msg in msgs:
            if self.start_us is not None and self.start == "timestamp" and _timestamp_us(msg) < self.start_us:
                continue  # before the start instant
            try:
                data = self._value(msg)
            except ValueError as error:
                bad.append((msg, str(error)))
                continue
            if data is not None:
                kept.append(msg)
                datas.append(data)
        if bad and self.on_error != "dead_letter":
            msg, reason = bad[0]
            raise ValueError(f"{where}: the record at offset {msg.offset()} {reason}")
        try:
            table = self.parse(datas, self._fills(kept), where)
        except (ValueError, pa.ArrowException) as error:
            if self.on_error != "dead_letter":
                reason = str(error).splitlines()[0] if str(error) else type(error).__name__
                raise ValueError(reason if reason.startswith(where) else f"{where}: {reason}") from None
            table, kept = self._parse_each(where, kept, datas, bad)
        self._dead_letters(where, bad)
        return table, [str(m.offset()) for m in kept]

    def _parse_each(self, where: str, msgs: list, datas: list, bad: list) -> tuple[pa.Table, list]:
        tables, kept = [], []
        for msg, data in zip(msgs, datas, strict=True):
            try:
                tables.append(self.parse([data], self._fills([msg]), where))
                kept.append(msg)
            except (ValueError, pa.ArrowException) as error:
                bad.append((msg, (str(error).splitlines()[0] if str(error) else type(error).__name__).removeprefix(f"{where}: ")))
        return (pa.concat_tables(tables) if tables else self.parse([], self._fills([]), where)), kept

    def _dead_letters(self, where: str, bad: list) -> None:
        from streamjoin.io.sources.rejects import dead_letter

        for msg, reason in bad:
            value = msg.value()
            text = value.decode("utf-8", errors="replace") if value is not None else None
            self.rejected.append(dead_letter(None, where, None, text, reason, sequence=str(msg.offset())))

    def _value(self, msg) -> bytes | None:
        """The record's row as one JSON object (None: nothing to stage, a Debezium tombstone);
        ValueError: not a row."""
        value = msg.value()
        if self.changelog == "upsert":
            key = _decoded(msg.key())
            row = {} if value is None else _object(value)
            if isinstance(key, dict):
                row = {**key, **row}
            return json.dumps({**row, "__change": "-" if value is None else "+"}).encode()
        if value is None:
            if self.changelog == "debezium":
                return None  # a tombstone after a delete: compaction's, not a change
            raise ValueError("has no value")
        if self.changelog == "debezium":
            from streamjoin.io.sources.changelog import read_debezium

            rows, rejected = read_debezium(value, "", None)
            if rejected:
                raise ValueError(rejected[0]["reason"])
            return json.dumps(rows[0], default=str).encode() if rows else None
        if "value" in self.fills.values():  # a value that is no object is the `_value` column (Lenses)
            try:
                return value if isinstance(json.loads(value), dict) else b"{}"
            except ValueError:
                return b"{}"
        _object(value)
        return value

    def _fills(self, msgs: list) -> dict:
        """The metadata columns of the records (io.sources.staging's parse), and their arrival (µs)."""
        fills: dict = {ARRIVED: [_timestamp_us(m) for m in msgs]}
        for column, what in self.fills.items():
            fills[column] = [_metadata(m, what) for m in msgs]
        return fills

    # ------------------------------------------------------------------ the broker

    def _call(self, doing: str, call):
        """A call to the broker, asked again with backoff until broker_timeout; then a clear failure."""
        from confluent_kafka import KafkaException

        deadline, delay = time.time() + self.timeout_s, 0.5
        while True:
            try:
                return call()
            except KafkaException as error:
                reason = error.args[0].str() if error.args and hasattr(error.args[0], "str") else str(error)
                if error.args and hasattr(error.args[0], "fatal") and error.args[0].fatal():
                    self._fail(f"could not {doing}: {reason}")
                if time.time() + delay > deadline:
                    self._fail(f"could not {doing} for {self.timeout_s:.0f} s: {reason}")
                log.warning("kafka %s: could not %s (%s): asking again in %.1f s", self.servers, doing, reason, delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _fail(self, reason: str):
        said = "; ".join(dict.fromkeys(e.str() for e in self.errors[-3:])) if self.errors else ""
        raise BrokerUnavailableError(f"kafka {self.servers} (topic '{self.topic}'): {reason}" + (f" ({said})" if said else ""))

    def close(self) -> None:
        """Leave the broker (the client's threads end; nothing is committed there)."""
        self.client.close()


def _timestamp_us(msg) -> int:
    kind, ms = msg.timestamp()
    return ms * 1000 if kind and ms is not None and ms >= 0 else int(time.time() * 1_000_000)


def _decoded(data: bytes | None):
    """A key or header as its JSON value when it is JSON (`42`, `{"id": 1}`), else its text."""
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _object(value: bytes) -> dict:
    try:
        row = json.loads(value)
    except ValueError as error:
        raise ValueError(f"is not JSON: {error}") from None
    if not isinstance(row, dict):
        raise ValueError("is not a JSON object")
    return row


def _metadata(msg, what: str):
    if what == "key":
        return _decoded(msg.key())
    if what == "partition":
        return str(msg.partition())
    if what == "offset":
        return str(msg.offset())
    if what == "timestamp":
        return _timestamp_us(msg)
    if what == "payload":
        return None if msg.value() is None else msg.value().decode("utf-8", errors="replace")
    if what == "value":
        return _decoded(msg.value())
    if what == "meta":  # Lenses' _meta facet (its timestamp: epoch milliseconds)
        return {"offset": msg.offset(), "partition": msg.partition(), "timestamp": _timestamp_us(msg) // 1000}
    headers = msg.headers() or []
    if what == "headers":
        return [{"key": k, "value": None if v is None else v.decode("utf-8", errors="replace")} for k, v in headers]
    name = what.removeprefix("header:")
    return next((_decoded(v) for k, v in headers if k == name), None)


def read_all(options: dict, schema: pa.Schema, rowtime: str, arrival: bool = False) -> pa.Table:
    """Every record the topic holds now, as rows in rowtime order (each partition read to its
    end): a table view's snapshot of a topic (Lenses `SELECT TABLE * FROM topic`)."""
    from streamjoin.io.formats.files import BOUND
    from streamjoin.io.sources.log_merge import record_parser

    source = KafkaSource(options, record_parser(schema, rowtime, arrival, options["topic"]), on_error="fail")
    try:
        rows, _ = source.poll({}, rowtime, ending=True, first_start_us=int(time.time() * 1_000_000))
    finally:
        source.close()
    return (rows if rows is not None else record_parser(schema, rowtime)([], {ARRIVED: []}, "")).drop_columns([BOUND])
