"""The physical plan (lower.physical, issue 66): how a query runs is decided once, by `plan_query`,
from the script, the options and what the checkpoint ran on; `explain` prints that value and a run
checks its checkpoint against it. Spark-free."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from streamjoin.lower.explain import explain_json, explain_text
from streamjoin.lower.physical import Engine, EngineConflict, Run, plan_query
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.plan import compile_sql
from streamjoin.runtime.checkpoint import CheckpointMismatch, check_plan, stamp

STREAMS = "".join(f"CREATE STREAM {s} (k INT, v INT) WITH (connector = 'files', path = '/{s}');" for s in "abc")
INTERVAL = STREAMS + ("SELECT STREAM a.k, b.v FROM a JOIN b ON a.k = b.k "
                      "AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' MINUTE AND a.ROWTIME;")
LONG_INTERVAL = STREAMS + ("SELECT STREAM a.k, b.v FROM a JOIN b ON a.k = b.k + 1 "
                           "AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' HOUR AND a.ROWTIME;")
CHAIN = STREAMS + ("SELECT STREAM a.k FROM a OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a "
                   "JOIN b OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS b ON a.k = b.k JOIN c ON b.k = c.k;")
ASOF = STREAMS + "SELECT STREAM a.k, b.v FROM a ASOF JOIN b ON a.k = b.k AND b.ROWTIME <= a.ROWTIME;"
BOUNDED = LoweringOptions(bounded=True)


def plan(sql: str, options: LoweringOptions = LoweringOptions(), recorded: str | None = None):
    script = compile_sql(sql)
    return plan_query(script, script.final, options, recorded)


def test_a_two_stream_interval_join_runs_in_the_micro_batch_loop_its_keyed_probe_in_the_driver_on_a_local_master():
    live = plan(INTERVAL)
    assert (live.run, live.engine) == (Run.BATCH_INTERVAL, Engine.BATCH)
    assert (live.joins[0].probe, live.joins[0].probe_in) == ("keyed", "driver")
    assert plan(INTERVAL, LoweringOptions(local=False)).joins[0].probe_in == "tasks"  # a cluster's master
    assert plan(INTERVAL, LoweringOptions(probe_in="tasks")).joins[0].probe_in == "tasks"  # as forced
    bounded = plan(INTERVAL, BOUNDED)
    assert (bounded.run, bounded.joins[0].probe, bounded.joins[0].probe_in) == (Run.BATCH_INTERVAL, "scan", None)


def test_a_long_live_range_the_keyed_probe_cannot_take_runs_on_sparks_join_and_a_bounded_run_batches_it():
    assert plan(LONG_INTERVAL).run == Run.SPARK
    assert plan(LONG_INTERVAL).joins[0].implementation == "stream-stream join"
    assert plan(LONG_INTERVAL, BOUNDED).run == Run.BATCH_INTERVAL


def test_a_chain_streams_live_and_batches_bounded_and_the_operator_runs_an_asof_join_live_by_column():
    assert (plan(CHAIN).run, plan(CHAIN, BOUNDED).run) == (Run.SPARK, Run.BATCH_CHAIN)
    live = plan(ASOF)
    assert live.run == Run.OPERATOR and live.joins[0].groups == "by the join keys" and live.joins[0].by_column == "asof"
    assert live.operator_groups == 32 and live.to_dict()["operator_groups"] == 32
    assert plan(ASOF, LoweringOptions(columnar=False)).joins[0].by_column is None
    assert plan(ASOF, BOUNDED).run == Run.BATCH_ASOF


def test_forcing_the_operator_keeps_the_joins_it_runs_on_it_and_plans_a_final_range_join_as_by_default():
    forced = LoweringOptions(join_operator="custom")
    assert plan(ASOF, replace(forced, bounded=True)).run == Run.OPERATOR  # (by default: the batch ASOF join)
    # the operator's EMIT FINAL RANGE join was retired (docs/architecture.md): the default's plan
    assert plan(INTERVAL, forced) == plan(INTERVAL)
    assert plan(INTERVAL, replace(forced, bounded=True)) == plan(INTERVAL, BOUNDED)
    assert plan(LONG_INTERVAL, forced).run == Run.SPARK
    eager = INTERVAL.replace("FROM a JOIN b", "FROM a LEFT JOIN b").replace("a.ROWTIME;", "a.ROWTIME EMIT EAGER;")
    assert plan(eager, forced).run == plan(eager).run == Run.OPERATOR  # (an outer join's EAGER rows are the operator's)


def test_a_resumed_query_keeps_its_checkpoints_engine_and_a_forced_operator_on_the_other_engine_is_refused():
    assert plan(CHAIN, BOUNDED, recorded="spark").run == Run.SPARK  # a bounded run resuming a live one
    assert plan(CHAIN, LoweringOptions(), recorded="batch").run == Run.BATCH_CHAIN  # and the reverse
    with pytest.raises(EngineConflict, match="STREAMJOIN_JOIN_OPERATOR=native would run it on a Spark streaming query"):
        plan(CHAIN, LoweringOptions(join_operator="native"), recorded="batch")
    with pytest.raises(EngineConflict, match="ran on a Spark streaming query"):
        plan(INTERVAL, LoweringOptions(join_operator="batch"), recorded="spark")
    changes = INTERVAL.replace("a.ROWTIME;", "a.ROWTIME EMIT CHANGES;")  # (the micro-batch loop cannot run it)
    assert plan(changes, LoweringOptions(join_operator="batch"), recorded="spark").run == Run.OPERATOR


def test_a_regular_join_with_a_table_whose_rows_may_change_their_join_key_runs_and_is_explained_as_one_group():
    sql = ("CREATE TABLE t (id INT PRIMARY KEY, k INT) WITH (connector = 'postgres-cdc', hostname = 'h', "
           "database.name = 'd', table.name = 't');"
           "CREATE STREAM s (k INT) WITH (connector = 'files', path = '/s');"
           "SELECT STREAM s.k, t.id FROM s JOIN t ON s.k = t.k EMIT CHANGES;")
    regular = plan(sql)
    assert regular.run == Run.OPERATOR and regular.group_key == () and regular.joins[0].groups == "one"
    text = explain_text(compile_sql(sql))
    assert "groups: ONE group: a changing table's row may change its join key" in text
    assert "by the join keys" not in text


def test_explain_prints_the_plan_and_its_json_is_what_a_run_records():
    script = compile_sql(CHAIN)
    for options in (LoweringOptions(), BOUNDED):
        value = plan_query(script, script.final, options)
        assert json.loads(explain_json(script, options))["physical"]["query"] == value.to_dict()
        text = explain_text(script, options)
        assert all(f"  {line}\n" in text for line in value.lines())
    assert "  plan: chain of interval joins on streamjoin's micro-batch loop; emit FINAL; into --output\n" in explain_text(script, BOUNDED)


def test_explain_until_idle_on_the_command_line_prints_a_bounded_runs_plan(tmp_path):
    path = tmp_path / "chain.sql"
    path.write_text(CHAIN)

    def explain(*more):
        result = subprocess.run([sys.executable, "-m", "streamjoin.cli", "explain", str(path), *more], capture_output=True,
                                text=True, check=True)
        return result.stdout

    assert "plan: streaming query on Spark" in explain()
    assert "plan: chain of interval joins on streamjoin's micro-batch loop" in explain("--until-idle")
    assert json.loads(explain("--until-idle", "--format", "json"))["physical"]["query"]["run"] == "chain of interval joins"


def test_a_checkpoint_the_operator_ran_with_other_hash_groups_or_by_column_is_refused_where_its_state_cannot_be_read(tmp_path):
    script = compile_sql(ASOF)
    ran = plan_query(script, script.final).to_dict()
    stamp(tmp_path, ran)
    check_plan(tmp_path, ran)  # the same: resumed
    with pytest.raises(CheckpointMismatch, match="with 32 hash group.s. and join 1: by column .asof.; this run would use 8"):
        check_plan(tmp_path, plan_query(script, script.final, LoweringOptions(operator_groups=8)).to_dict())
    with pytest.raises(CheckpointMismatch, match="this run would use 32 and join 1: row by row"):
        check_plan(tmp_path, plan_query(script, script.final, LoweringOptions(columnar=False)).to_dict())
    stamp(tmp_path, plan_query(script, script.final, LoweringOptions(columnar=False)).to_dict())
    check_plan(tmp_path, ran)  # row by row, then by column: the column engine converts the row engine's state
    batch = compile_sql(INTERVAL)
    check_plan(tmp_path, plan_query(batch, batch.final).to_dict())  # (another engine: ran_on's to decide)
    check_plan(tmp_path / "new", ran)  # nothing recorded


def test_every_run_of_the_plan_has_one_lowering():
    from streamjoin.lower import _LOWERINGS

    assert set(_LOWERINGS) == set(Run) - {Run.SPARK_ONE_BATCH}  # (a part's, lowered by lower.staged_views)
    assert {r.engine for r in Run} == set(Engine)
    assert replace(plan(INTERVAL), source=None) == plan(INTERVAL)  # (the query planned is not part of its value)


def test_a_view_is_checked_by_the_rules_of_the_engine_its_part_runs_on():
    view = STREAMS + ("CREATE VIEW j AS SELECT STREAM a.k AS ak, b.v FROM a JOIN b ON a.k = b.k "
                      "AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' SECOND AND a.ROWTIME;\n"
                      "SELECT STREAM j.ak, c.v FROM j ASOF LEFT JOIN c ON j.ak = c.k AND c.ROWTIME <= j.ROWTIME;")
    script = compile_sql(view)
    part = plan_query(script, script.view("j"), top=False)
    assert (part.run, part.rules) == (Run.SPARK, Engine.SPARK)  # it once was checked by the operator's rules
    assert plan_query(script, script.final).rules == Engine.OPERATOR
