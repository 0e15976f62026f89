"""Producing to and reading back from a real Kafka broker in tests (the embedded Tansu)."""

from __future__ import annotations

import json
import time


def produce(broker, topic: str, rows: list, partition: int = 0, key: bytes | None = None,
            timestamp_ms: int | None = None) -> None:
    """Rows (dicts as JSON, bytes as they are, None as a record without a value) into one
    partition, flushed. `broker`: an EmbeddedKafka or its bootstrap address."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": getattr(broker, "servers", broker)})
    for row in rows:
        value = row if isinstance(row, bytes) or row is None else json.dumps(row).encode()
        extra = {"timestamp": timestamp_ms} if timestamp_ms is not None else {}
        producer.produce(topic, value=value, key=key, partition=partition, **extra)
    assert producer.flush(30) == 0


def read_topic(servers: str, topic: str) -> list:
    """Every record of the topic now: (key, value as JSON, headers), each partition to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    client = Consumer({"bootstrap.servers": servers, "group.id": "t", "enable.partition.eof": True})
    try:
        metadata = client.list_topics(timeout=10).topics.get(topic)
        if metadata is None:
            return []
        client.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions])
        records, ended = [], set()
        deadline = time.time() + 30
        while len(ended) < len(metadata.partitions) and time.time() < deadline:
            for msg in client.consume(100, timeout=0.5):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        ended.add(msg.partition())
                    continue
                records.append((msg.key(), json.loads(msg.value()), dict(msg.headers() or [])))
        return records
    finally:
        client.close()
