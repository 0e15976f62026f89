"""Where a query's rows go besides `run --output`: the INSERT INTO target as a table sink's spec
(`sink_spec`: an S3 / Delta / upsert table, io.sinks.table_sink) or a Kafka topic (`topic_target`:
an output address, io.sinks.kafka_sink). Spark-free."""

from __future__ import annotations

from streamjoin.env import expand
from streamjoin.errors import Unsupported
from streamjoin.plan.model import Query, Script
from streamjoin.plan.windows import BucketWindow


def sink_spec(script: Script, query: Query):
    """The INSERT INTO target as a SinkSpec (None without INSERT INTO), or Unsupported."""
    from streamjoin.io.sinks.table_sink import HOUR, SinkSpec

    if not query.sink:
        return None
    relation = next((r for r in script.sinks if r.name == query.sink), None)
    if relation is None:
        return None  # an undeclared target (Lenses' topics): rows go to `run`'s --output
    if (relation.option("connector") or "").lower() in ("kafka", "blackhole"):
        return None  # a topic: rows go there as they go to --output (topic_target); RisingWave's blackhole: --output
    try:
        spec = SinkSpec.from_options(relation.name, dict(relation.options), expand)
    except ValueError as error:
        raise Unsupported(str(error)) from None
    if spec.partitioned_by == HOUR and any(o.name == HOUR for o in query.output):
        raise Unsupported(f"sink '{relation.name}' is partitioned by '{HOUR}', which is also an output column: rename the column")
    if spec.partitioned_by == HOUR:
        units = {query.aggregation.bucket_unit if query.aggregation else None}
        units |= {i.window.unit for i in query.inputs if isinstance(i.window, BucketWindow)}
        coarse = sorted(u for u in units if u and u.upper() in ("DAY", "WEEK", "MONTH", "YEAR"))
        if coarse:  # a day's rows carry the day's start but come when it closes: hour 00 cannot be marked at 01:00
            raise Unsupported(f"sink '{relation.name}' marks hours complete, but the query's {coarse[0]} buckets close "
                              "later than their hours: partition such a sink by nothing (leave out partitioned_by)")
    return spec


def topic_target(script: Script, query: Query) -> str | None:
    """The `kafka://` output of a query that INSERTs INTO (or is the FROM of) a sink declared with
    connector 'kafka' (io.sinks.kafka_sink): its topic, its key (primary_key), its brokers. None: not one."""
    from streamjoin.io.sinks.kafka_sink import target

    relation = next((r for r in script.sinks if r.name == query.sink), None) if query.sink else None
    if relation is None or (relation.option("connector") or "").lower() != "kafka":
        return None
    option = relation.option
    topic = expand(option("topic") or relation.name)
    servers = next((expand(option(n)) for n in ("properties.bootstrap.server", "properties.bootstrap.servers",
                                                 "bootstrap.servers", "seed_brokers") if option(n)), None)
    key = [k.strip() for k in (option("primary_key") or option("key") or "").split(",") if k.strip()]
    return target(topic, key, servers)
