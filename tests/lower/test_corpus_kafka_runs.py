"""The corpus's programs that read Kafka run end to end on a real broker (issue 41): every program
`check` accepts whose inputs are Kafka topics (and files or rows it writes itself) runs
`--until-idle` as written, its brokers pointed at a broker of the test's own (Tansu, a process;
STREAMJOIN_KAFKA_BOOTSTRAP), its topics filled with generated rows. Each run must finish without
an error, read every record (none rejected) and write rows of the program's own output columns,
to `--output` or, for a program whose sink is a Kafka topic, to that topic."""

from __future__ import annotations

import json
import random

import pytest
from kafka_helpers import produce, read_topic
from streamjoin.plan import compile_sql
from streamjoin.plan.model import Kind
from streamjoin.runtime.pipeline import Pipeline
from test_corpus_runs import CORPUS, _header_ok, assert_columns, assert_finished, generate, inputs_of


def kafka_program(path) -> bool:
    head = path.read_text().splitlines()[:8]
    if not _header_ok(path) or any(line.startswith("-- database:") for line in head):
        return False
    connectors = {(r.option("connector") or "").lower() for r in inputs_of(compile_sql(path.read_text(), path.name))}
    return "kafka" in connectors and connectors <= {"kafka", "files", "values", ""}


PROGRAMS = sorted(p for p in CORPUS.glob("*/*.sql") if kafka_program(p))
# programs `check` accepts and `run` refuses before reading data, and why (docs/semantics-decisions.md)
RUN_REFUSES = {
    "risingwave/07_vitals_alerts_left_join_jdbc_sink": r"SELECT DISTINCT ON \(...\) over a stream",  # a top-1 per key
}


def test_the_corpus_has_risingwave_programs_that_read_kafka():
    assert len(PROGRAMS) >= 5, [p.name for p in PROGRAMS]


# a minute and a half each, in make test-long: their constructs (running aggregates' views joined and
# grouped, window joins of windows that never close) are folded to the SQL answer in make test
# (tests/lower/test_changelog_views.py)
LONG_RUNS = {"risingwave/01_ad_ctr_window_join", "risingwave/14_nexmark_q5_hop_join_sink"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.long) if f"{p.parent.name}/{p.stem}" in LONG_RUNS else p
                                  for p in PROGRAMS], ids=[f"{p.parent.name}/{p.stem}" for p in PROGRAMS])
def test_a_corpus_program_that_reads_kafka_runs_on_the_broker_and_writes_its_columns(spark, tmp_path, monkeypatch, path):
    from streamjoin.errors import Unsupported
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka, create_topic
    from streamjoin.io.storage.kafka_client import BOOTSTRAP_ENV
    from streamjoin.lower.inputs import kafka_options
    from streamjoin.lower.sink_target import topic_target

    sql = path.read_text()
    refused = RUN_REFUSES.get(f"{path.parent.name}/{path.stem}")
    if refused is not None:
        with pytest.raises(Unsupported, match=refused):
            Pipeline.from_sql(sql, path.name)
        return
    with EmbeddedKafka(port=0, log_path=str(tmp_path / "tansu.log")) as broker:
        monkeypatch.setenv(BOOTSTRAP_ENV, broker.servers)
        script = compile_sql(sql, path.name)
        rng = random.Random(path.name)
        total = 0
        for relation in inputs_of(script):
            if (relation.option("connector") or "").lower() != "kafka":
                continue
            rows = generate(relation, tmp_path / "generated" / relation.name, rng)
            create_topic(broker.servers, kafka_options(relation)["topic"], 1)
            produce(broker, kafka_options(relation)["topic"], rows)
            total += len(rows) if relation.kind == Kind.STREAM else 0  # a table is read whole, not counted
        pipeline = Pipeline.from_sql(sql, path.name)
        out = tmp_path / "out"
        statuses = pipeline.run(spark, tmp_path / "checkpoint", str(out), until_idle=True)
        assert_finished(statuses)
        read = sum(i.get("rows_read", 0) + i.get("late_rows", 0) for s in statuses.values()
                   for i in (s.get("inputs") or {}).values())
        assert read >= total, (read, total, statuses)  # every record generated was read (views may read one twice)
        target = topic_target(pipeline.script, pipeline.query) if len(pipeline.script.runs) == 1 else None
        if target is not None:
            rows = [value for _, value, _ in read_topic(broker.servers, target.removeprefix("kafka://").split("?")[0])]
        else:
            rows = [json.loads(line) for part in sorted(out.rglob("part-*.jsonl")) for line in part.read_text().splitlines()]
    assert_columns(rows, pipeline)
