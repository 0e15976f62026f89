"""The Kafka client's settings, shared by the Kafka input (io.sources.kafka), the Kafka sink
(io.sinks.kafka_sink) and the embedded broker (io.storage.kafka_broker): which brokers to use, a
consumer by partition assignment, and librdkafka's own log lines."""

from __future__ import annotations

import logging
import os

BOOTSTRAP_ENV = "STREAMJOIN_KAFKA_BOOTSTRAP"  # overrides every program's brokers (docs/kafka.md)
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def bootstrap(declared: str | None, env=None) -> str:
    """The brokers to use: STREAMJOIN_KAFKA_BOOTSTRAP if set, else the program's, else localhost."""
    env = os.environ if env is None else env
    return env.get(BOOTSTRAP_ENV) or declared or DEFAULT_BOOTSTRAP


def consumer(servers: str, errors: list | None = None):
    from confluent_kafka import Consumer

    def on_error(error):
        if errors is not None:
            errors.append(error)

    return Consumer({"bootstrap.servers": servers, "group.id": "streamjoin", "enable.auto.commit": False,
                     "enable.partition.eof": True, "auto.offset.reset": "earliest", "error_cb": on_error,
                     "socket.connection.setup.timeout.ms": 5000, "reconnect.backoff.max.ms": 2000,
                     "logger": CLIENT_LOG})


class _ClientLog:
    """librdkafka's own log lines (a refused connection, every 50 ms) at DEBUG: what they say
    reaches the operator once, as this module's retry warnings and failure."""

    def log(self, level, message, *args):
        logging.getLogger("streamjoin.kafka.client").debug(message, *args)


CLIENT_LOG = _ClientLog()
