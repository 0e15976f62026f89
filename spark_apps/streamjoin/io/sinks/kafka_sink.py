"""A query's rows into a Kafka topic, exactly once across restarts (`run --output kafka://TOPIC`,
or a declared sink with connector 'kafka'; docs/kafka.md).

    kafka://orders_enriched?key=order_id&bootstrap=broker:9092

Each released batch of rows (a *release*, named `part-NNNNNNNN`: names sort in emission order,
and a release replayed after a crash has the same name and the same rows) becomes one record per
row: the value is the row as `run` writes it (one JSON object), the key the JSON of the `key`
column's value (an object of several columns' values; no key without `key`), and two headers
say which release and which row of it the record is (`streamjoin.release`, `streamjoin.row`).

Transactions cannot make this exactly once on every broker (Tansu delivers an aborted
transaction's records), so duplicates are prevented this way: before a release is sent, the
partitions' end offsets are saved with its name (`pending`, in the checkpoint); once every record
is acknowledged, the release is saved as done. A release at or before the last done one is never
sent again; a release that was pending when the process died is sent again without the rows the
topic already holds from it (found by their headers, from the saved offsets on). The producer is
idempotent (no record is doubled by its own retries).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from streamjoin.faults import alive, armed_at, crash_point, generation
from streamjoin.io.sinks.release_log import ReleaseLog

RELEASE, ROW = "streamjoin.release", "streamjoin.row"


def target(topic: str, key: list[str] | tuple[str, ...] = (), servers: str | None = None) -> str:
    """The `kafka://` target of a topic (what `run --output` takes)."""
    from urllib.parse import urlencode

    query = {k: v for k, v in (("key", ",".join(key)), ("bootstrap", servers or "")) if v}
    return f"kafka://{topic}" + (f"?{urlencode(query)}" if query else "")


class TopicWriter:
    """Writes releases into a topic (see the module docstring); `write`/`write_table` as RowWriter."""

    appends = True  # a release sent cannot be rewritten: a replay must hold the same rows (OrderedSink)

    def __init__(self, target_url: str, state_dir: Path, suffix: str = ""):
        from confluent_kafka import Producer

        from streamjoin.io.storage.kafka_client import CLIENT_LOG, bootstrap

        parts = urlsplit(target_url)
        options = parse_qs(parts.query)
        self.topic = parts.netloc + parts.path
        if not self.topic:
            raise ValueError(f"output {target_url}: name the topic (kafka://TOPIC)")
        self.key = [k for k in ",".join(options.get("key", [])).split(",") if k]
        self.servers = bootstrap(options.get("bootstrap", [None])[0])
        self.suffix = suffix
        self.log = ReleaseLog(state_dir / f"kafka-sink{suffix}.json")
        self._born = generation()  # (a crash harness's simulated kill: a killed run's writer sends nothing more)
        self.producer = Producer({"bootstrap.servers": self.servers, "enable.idempotence": True, "linger.ms": 20,
                                  "logger": CLIENT_LOG})

    def write(self, name: str, rows: list[dict]) -> None:
        from streamjoin.io.formats.jsonlines import format_rows

        self._send(name, [line.rstrip("\n").encode() for line in format_rows(rows)],
                   [self._key({k: r.get(k) for k in self.key}) for r in rows])

    def write_table(self, name: str, table) -> None:
        from streamjoin.io.formats.jsonlines import format_lines

        lines = [v.as_py().rstrip("\n").encode() for chunk in format_lines(table) for v in chunk]
        keys = (table.select(self.key).to_pylist() if self.key else [{}] * table.num_rows)
        self._send(name, lines, [self._key(k) for k in keys])

    def _key(self, values: dict) -> bytes | None:
        from streamjoin.io.formats.jsonlines import format_value

        if not self.key:
            return None
        if len(self.key) == 1:
            return json.dumps(format_value(values[self.key[0]])).encode()
        return json.dumps({k: format_value(v) for k, v in values.items()}).encode()

    def _send(self, name: str, values: list[bytes], keys: list[bytes | None]) -> None:
        if not values:
            return
        alive(self._born)
        release = f"{name}{self.suffix}"
        if self.log.done(release):
            return  # sent before a restart: a replay
        pending = self.log.pending(release)
        present = self._rows_of(release, pending["offsets"]) if pending is not None else set()
        if pending is None:
            self.log.begin(release, offsets=self._ends())
        failures: list = []

        def delivered(error, msg):
            if error is not None:
                failures.append(error)

        headers_of = [(RELEASE, release.encode())]
        half = len(values) // 2
        for i, (value, key) in enumerate(zip(values, keys, strict=True)):
            if i == half:
                if armed_at("sink.inside_release"):  # the crash harness: the first half in the topic
                    self.producer.flush(120)
                crash_point("sink.inside_release")
            if i not in present:
                self._produce(value, key, [*headers_of, (ROW, str(i).encode())], delivered)
        left = self.producer.flush(120)
        if left or failures:
            reason = failures[0].str() if failures else f"{left} records not acknowledged in 120 s"
            raise ConnectionError(f"kafka {self.servers}: writing release {release} into topic '{self.topic}': {reason}")
        self.log.finish(release)

    def _produce(self, value: bytes, key: bytes | None, headers: list, delivered) -> None:
        while True:
            try:
                self.producer.produce(self.topic, value=value, key=key, headers=headers, on_delivery=delivered)
                return
            except BufferError:  # the producer's queue is full: let it drain
                self.producer.poll(0.1)

    def _ends(self) -> dict[str, int]:
        """The topic's end offset per partition now (nothing for a topic not made yet)."""
        from confluent_kafka import TopicPartition

        from streamjoin.io.storage.kafka_client import consumer

        client = consumer(self.servers)
        try:
            metadata = client.list_topics(timeout=10).topics.get(self.topic)
            if metadata is None or metadata.error is not None:
                return {}
            return {str(p): client.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10, cached=False)[1]
                    for p in metadata.partitions}
        finally:
            client.close()

    def _rows_of(self, release: str, offsets: dict[str, int]) -> set[int]:
        """The rows of `release` the topic holds after `offsets` (a send cut short by a crash)."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

        from streamjoin.io.storage.kafka_client import consumer

        client = consumer(self.servers)
        present: set[int] = set()
        try:
            metadata = client.list_topics(timeout=10).topics.get(self.topic)
            if metadata is None:
                return present
            partitions = list(metadata.partitions)
            client.assign([TopicPartition(self.topic, p, offsets.get(str(p), OFFSET_BEGINNING)) for p in partitions])
            ended: set[int] = set()
            deadline = time.time() + 60
            while len(ended) < len(partitions) and time.time() < deadline:
                for msg in client.consume(num_messages=10_000, timeout=0.5):
                    if msg.error() is not None:
                        if msg.error().code() == KafkaError._PARTITION_EOF:
                            ended.add(msg.partition())
                        continue
                    headers = dict(msg.headers() or [])
                    if headers.get(RELEASE) == release.encode() and ROW in headers:
                        present.add(int(headers[ROW]))
            if len(ended) < len(partitions):
                raise ConnectionError(f"kafka {self.servers}: could not read topic '{self.topic}' to its end to find "
                                      f"what release {release} wrote before the restart")
        finally:
            client.close()
        return present
