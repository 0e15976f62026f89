"""The file's own INSERT / UPDATE / DELETE statements as a clock (plan.analyzer.dml,
plan.rewrites.script_time): each statement an epoch, each table row the epoch it took its values at,
each version an UPDATE or DELETE ended kept with its span, and a process-time temporal join over
rows the file gives holding each row's epoch within its version's."""

from __future__ import annotations

import json

import pytest
from streamjoin.errors import SqlError
from streamjoin.plan import compile_sql
from streamjoin.plan.rewrites.script_time import EPOCH, FROM, TO, VERSIONS

TABLES = """create table stream(id1 int, a1 int) APPEND ONLY;
create table version(id2 int, a2 int, primary key (id2));
"""


def _rows(relation, option="rows"):
    return json.loads(relation.option(option) or "[]")


def test_each_statement_is_an_epoch_and_a_table_keeps_what_its_updates_and_deletes_ended():
    script = compile_sql(TABLES + """insert into version values (1, 10), (2, 20);
update version set a2 = 11 where id2 = 1;
insert into version values (3, 30);
delete from version where id2 = 2;
select * from version;""", dialect="risingwave")
    version = script.relation("version")
    assert _rows(version) == [{"id2": 1, "a2": 11}, {"id2": 3, "a2": 30}]
    assert _rows(version, "epochs") == [2, 3]
    assert _rows(version, "retired") == [[1, 2, {"id2": 1, "a2": 10}], [1, 4, {"id2": 2, "a2": 20}]]


def test_an_update_whose_where_is_null_for_a_row_leaves_its_epoch_alone():
    script = compile_sql(TABLES + """insert into version values (1, NULL), (2, 5);
update version set a2 = 0 where a2 > 1;
select * from version;""", dialect="risingwave")
    assert _rows(script.relation("version"), "epochs") == [1, 2]


def test_a_temporal_join_over_rows_the_file_gives_reads_the_tables_versions_at_each_rows_epoch():
    script = compile_sql(TABLES + """create materialized view v as select id1, a2 from stream
  left join version FOR SYSTEM_TIME AS OF PROCTIME() on id1 = id2;
insert into stream values (1, 1);
insert into version values (1, 10);
insert into stream values (1, 2);
delete from version;""", dialect="risingwave")
    view = script.view("v")
    table = view.input("version")
    assert table.relation == "version" + VERSIONS
    versions = script.relation(table.relation)
    assert [(r["id2"], r[FROM], r[TO]) for r in _rows(versions)] == [(1, 2, 4)]
    assert [r[EPOCH] for r in _rows(script.relation("stream"))] == [1, 3]
    residual = view.joins[0].condition.residual[-1].sql()
    assert residual == (f"GREATEST(stream.{EPOCH}, 0) >= version.{FROM} AND "
                        f"(version.{TO} IS NULL OR GREATEST(stream.{EPOCH}, 0) < version.{TO})")
    assert [o.name for o in view.output] == ["id1", "a2"]  # the epoch columns are not the view's


def test_a_view_created_after_rows_came_reads_them_at_its_creation():
    script = compile_sql(TABLES + """insert into stream values (1, 1);
insert into version values (1, 10);
create materialized view v as select id1, a2 from stream join version FOR SYSTEM_TIME AS OF PROCTIME() on id1 = id2;""",
                         dialect="risingwave")
    assert script.view("v").epoch == 2
    assert "GREATEST(stream.__sj_epoch, 2)" in script.view("v").joins[0].condition.residual[-1].sql()


def test_a_stream_of_files_looks_up_the_table_as_the_file_leaves_it():
    script = compile_sql("""create source s (id1 int) with (connector = 'posix_fs', posix_fs.root = '/in') FORMAT PLAIN ENCODE JSON;
create table version(id2 int, a2 int, primary key (id2));
insert into version values (1, 10);
update version set a2 = 11;
create materialized view v as select id1, a2 from s join version FOR SYSTEM_TIME AS OF PROCTIME() on id1 = id2;""",
                         dialect="risingwave")
    assert script.view("v").input("version").relation == "version"
    assert not script.view("v").joins[0].condition.residual


def test_a_table_with_a_connector_still_needs_its_primary_key_covered():
    with pytest.raises(SqlError, match="primary key"):
        compile_sql("""create source s (id1 int) with (connector = 'posix_fs', posix_fs.root = '/in') FORMAT PLAIN ENCODE JSON;
create table version(id2 int, a2 int, primary key (id2)) with (connector = 'postgres', url = 'postgresql://h/db', table = 'v');
create materialized view v as select id1, a2 from s join version FOR SYSTEM_TIME AS OF PROCTIME() on id1 = a2;""",
                    dialect="risingwave")


def test_a_row_inserted_under_a_key_the_table_holds_overwrites_it_and_a_stream_keeps_both():
    script = compile_sql(TABLES + """insert into version values (1, 10), (2, 20);
insert into version values (1, 11);
insert into stream values (1, 1);
insert into stream values (1, 1);
select * from version;""", dialect="risingwave")
    version = script.relation("version")
    assert _rows(version) == [{"id2": 1, "a2": 11}, {"id2": 2, "a2": 20}]
    assert _rows(version, "epochs") == [2, 1]
    assert _rows(version, "retired") == [[1, 2, {"id2": 1, "a2": 10}]]
    assert len(_rows(script.relation("stream"))) == 2


def test_an_update_or_delete_of_a_table_with_no_rows_changes_nothing():
    script = compile_sql(TABLES + """delete from version where id2 = 1;
update version set a2 = 1 where id2 = 2;
insert into version values (1, 10);
select * from version;""", dialect="risingwave")
    assert _rows(script.relation("version")) == [{"id2": 1, "a2": 10}]
    assert _rows(script.relation("version"), "epochs") == [3]
