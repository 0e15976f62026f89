"""A topic's columns, read from its records: how a Lenses program's topics, which it names
without declaring them, become streams (`plan.catalog.TOPICS`; docs/kafka.md).

The first records of each partition (up to `SAMPLE` in all) are read from the beginning; each
JSON value's fields become columns, typed by what they hold (true/false BOOLEAN, whole numbers
BIGINT, other numbers DOUBLE, objects STRUCT<...> field by field, anything else VARCHAR), in the
order they are first seen; the records' keys give `_key`, typed the same way; values that are
not JSON objects give `_value`. A topic that does
not exist, or holds no record yet, has no columns to read: a ValueError says so, and the program
is refused at the name (declare the topic instead).
"""

from __future__ import annotations

import json
import time

SAMPLE = 500
WAIT_S = 5.0


def topic_columns(topic: str, servers: str | None = None) -> list[tuple[str, str]]:
    from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

    from streamjoin.io.storage.kafka_client import bootstrap, consumer

    servers = bootstrap(servers)
    client = consumer(servers)
    try:
        try:
            # all topics: a request for one topic by name makes some brokers (Tansu) create it
            metadata = client.list_topics(timeout=WAIT_S).topics.get(topic)
        except KafkaException as error:
            raise ValueError(f"the broker {servers} did not answer: {error.args[0].str() if error.args else error}") from None
        if metadata is None or metadata.error is not None or not metadata.partitions:
            raise ValueError(f"the broker {servers} has no topic '{topic}'")
        client.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions])
        values, keys, ended = [], [], set()
        deadline = time.time() + WAIT_S
        while len(values) < SAMPLE and len(ended) < len(metadata.partitions) and time.time() < deadline:
            for msg in client.consume(num_messages=SAMPLE, timeout=0.2):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        ended.add(msg.partition())
                    continue
                values.append(msg.value())
                keys.append(msg.key())
    finally:
        client.close()
    decoded = [v for v in (_json(v) for v in values) if v is not None]
    rows = [row for row in decoded if isinstance(row, dict)]
    if not decoded:
        raise ValueError(f"topic '{topic}' on {servers} holds no record to read its fields from")
    # values that are no JSON objects (a number, a string): the `_value` column, as Lenses names it
    columns = _fields(rows) if rows else [("_value", _typed(decoded))]
    present = [k for k in (_json(k) for k in keys) if k is not None]
    if present and "_key" not in dict(columns):
        columns.insert(0, ("_key", _typed(present)))
    return columns


def _json(data: bytes | None):
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", errors="replace")


def _fields(rows: list[dict]) -> list[tuple[str, str]]:
    seen: dict[str, list] = {}
    for row in rows:
        for name, value in row.items():
            seen.setdefault(name, [])
            if value is not None:
                seen[name].append(value)
    return [(name, _typed(values)) for name, values in seen.items()]


def _typed(values: list) -> str:
    """The type of a field's values (objects: a STRUCT of all their fields)."""
    if values and all(isinstance(v, dict) and v for v in values):
        return "STRUCT<" + ", ".join(f"{_quoted(n)} {t}" for n, t in _fields(values)) + ">"
    kinds = {_type(v) for v in values}
    if len(kinds) == 1:
        return kinds.pop()
    return "DOUBLE" if kinds == {"BIGINT", "DOUBLE"} else "VARCHAR"


def _type(value) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    return "VARCHAR"


def _quoted(name: str) -> str:
    return name if name.isidentifier() and name.islower() else '"' + name.replace('"', '""') + '"'
