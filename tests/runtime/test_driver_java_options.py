"""The driver JVM's options (runtime.session.driver_java_options): a bounded run (`--until-idle`)
gets the parallel collector that returns freed heap (less peak memory, issue 42), a live run the
JVM's own, and STREAMJOIN_DRIVER_JAVA_OPTIONS wins over both; the class archive's options come
with any of them (tests/runtime/test_class_archive.py), here turned off. A bounded run over
little input (Pipeline.input_bytes) compiles with C1 only."""

from __future__ import annotations

from streamjoin.runtime import runner
from streamjoin.runtime.pipeline import Pipeline
from streamjoin.runtime.session import BOUNDED_JAVA_OPTIONS, SMALL_JAVA_OPTIONS, driver_java_options, shuffle_partitions
from streamjoin.settings import Settings


def test_a_bounded_run_gets_the_parallel_collector_and_a_live_run_the_jvms_own():
    settings = Settings.from_env({"STREAMJOIN_CLASS_ARCHIVE": "off"})
    assert "-XX:+UseParallelGC" in driver_java_options(settings, bounded=True) == BOUNDED_JAVA_OPTIONS
    assert driver_java_options(settings, bounded=False) is None


def test_the_operators_java_options_win_over_the_bounded_runs():
    settings = Settings.from_env({"STREAMJOIN_DRIVER_JAVA_OPTIONS": "-XX:+UseG1GC", "STREAMJOIN_CLASS_ARCHIVE": "off"})
    assert driver_java_options(settings, bounded=True) == driver_java_options(settings, bounded=False) == "-XX:+UseG1GC"


def test_a_bounded_run_over_little_input_gets_the_quick_jit_tier_only():
    settings = Settings.from_env({"STREAMJOIN_CLASS_ARCHIVE": "off"})
    assert driver_java_options(settings, bounded=True, small=True) == f"{BOUNDED_JAVA_OPTIONS} {SMALL_JAVA_OPTIONS}"
    assert "TieredStopAtLevel" not in driver_java_options(settings, bounded=True)
    assert driver_java_options(settings, bounded=False, small=True) is None  # a live run runs on: C2 pays
    mine = Settings.from_env({"STREAMJOIN_DRIVER_JAVA_OPTIONS": "-XX:+UseG1GC", "STREAMJOIN_CLASS_ARCHIVE": "off"})
    assert driver_java_options(mine, bounded=True, small=True) == "-XX:+UseG1GC"


def test_a_pipeline_counts_the_bytes_of_its_local_input_files_and_none_for_inputs_it_cannot_size(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "1.json").write_text('{"k": 1}\n' * 100)
    (tmp_path / "a" / ".2.json.tmp").write_text("not yet landed")  # a file the stager skips, not counted
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "1.json").write_text('{"k": 2}\n')
    streams = (f"CREATE STREAM a (k INT) WITH (connector = 'files', path = '{tmp_path / 'a'}');\n"
               f"CREATE STREAM b (k INT) WITH (connector = 'files', path = '{tmp_path / 'b'}');\n")
    join = "SELECT STREAM a.k FROM a JOIN b ON a.k = b.k AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' SECOND AND a.ROWTIME;"
    assert Pipeline.from_sql(streams + join).input_bytes(tmp_path / "ck") == 900 + 9
    topic = streams.replace(f"connector = 'files', path = '{tmp_path / 'b'}'",
                            "connector = 'kafka', topic = 'b', \"properties.bootstrap.server\" = '127.0.0.1:9'")
    assert Pipeline.from_sql(topic + join).input_bytes(tmp_path / "ck") is None  # a topic's size is not known here
    table = (f"CREATE STREAM a (k INT) WITH (connector = 'files', path = '{tmp_path / 'a'}');\n"
             f"CREATE TABLE t (k INT PRIMARY KEY, v INT) WITH (connector = 'files', path = '{tmp_path / 'b'}');\n"
             "SELECT STREAM a.k, t.v FROM a JOIN t ON a.k = t.k;")
    assert Pipeline.from_sql(table).input_bytes(tmp_path / "ck") is None  # nor a snapshot's


def test_the_feeder_looks_at_local_folders_more_often_than_at_inputs_read_over_the_network(tmp_path):
    streams = (f"CREATE STREAM a (k INT) WITH (connector = 'files', path = '{tmp_path / 'a'}');\n"
               "CREATE STREAM b (k INT) WITH (connector = 'kafka', topic = 'b', \"properties.bootstrap.server\" = '127.0.0.1:9');\n"
               "CREATE STREAM c (k INT) WITH (connector = 's3', path = 's3://bucket/c/');\n")
    sql = streams + ("SELECT STREAM a.k FROM a JOIN b ON a.k = b.k AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' SECOND AND a.ROWTIME "
                     "JOIN c ON a.k = c.k AND c.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' SECOND AND a.ROWTIME;")
    pipeline = Pipeline.from_sql(sql)
    specs = pipeline.input_specs(tmp_path / "ck", tmp_path / "ck" / "late", pipeline.script.runs[0])
    assert {s.alias: s.remote for s in specs} == {"a": False, "b": True, "c": True}
    assert runner.FEED_S < runner.REMOTE_FEED_S  # (each look at a topic or a bucket is a request)


def test_a_bounded_run_shuffles_into_four_partitions_a_core_and_a_live_run_into_one():
    # a bounded run's joined rows are collected a partition at a time (smaller partitions: less
    # held in the driver JVM); a live query's state stores stay one per core
    assert shuffle_partitions(2, bounded=True) == 8 and shuffle_partitions(2, bounded=False) == 2
    assert shuffle_partitions(1, bounded=False) == 2
