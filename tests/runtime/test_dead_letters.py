"""Rows that cannot be read stop nothing and are never lost (issue 20, item 1): each becomes a
dead letter under `rejected/<input>/` with its file, line, raw text and reason, counted in
status.json, while every good row of the same file is joined as usual; `on_error = 'fail'` stops
at the first one instead, naming file, line and column."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from runtime_helpers import read_output, run_until_idle, streamjoin, ts
from streamjoin.io.sources.rejects import RejectedRow, read_lenient

pytestmark = [pytest.mark.spark]  # runs, in the session and as `streamjoin run`

JOIN = """
CREATE STREAM a (k INT, va VARCHAR, ta TIMESTAMP)
    WITH (connector = 'files', format = '{fmt}', path = '{dir}/a', rowtime = 'ta'{extra});
CREATE STREAM b (k INT, vb VARCHAR, tb TIMESTAMP)
    WITH (connector = 'files', format = 'json', path = '{dir}/b', rowtime = 'tb');
SELECT STREAM a.k, a.va, b.vb
FROM a OVER (RANGE INTERVAL '1' SECOND PRECEDING) JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) ON a.k = b.k;
"""

A_LINES = [
    json.dumps({"k": 1, "va": "a1", "ta": ts(1000)}),
    json.dumps({"k": 2, "va": "a2", "ta": ts(2000)}),
    f'{{"k": 3, "va": oops, "ta": "{ts(2500)}"}}',  # malformed JSON (column 16: the o of oops)
    json.dumps({"k": "notanint", "va": "a4", "ta": ts(2600)}),  # a value of the wrong type
    json.dumps({"k": 5, "va": "a5"}),  # no rowtime
    json.dumps({"k": 6, "va": "a6", "ta": "yesterday-ish"}),  # a rowtime that does not parse
    json.dumps({"k": 3, "va": "a3", "ta": ts(3000)}),
]


def write_inputs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "p1.json").write_text("\n".join(A_LINES) + "\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "p1.json").write_text("".join(json.dumps({"k": k, "vb": f"b{k}", "tb": ts(t)}) + "\n"
                                                    for k, t in ((1, 1200), (2, 2100), (3, 3100), (5, 2700))))


def rejected_records(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.glob("rejected-*.jsonl")) for line in f.read_text().splitlines()]


def test_bad_rows_become_dead_letters_with_file_line_raw_text_and_reason_and_every_good_row_is_joined(spark, tmp_path):
    write_inputs(tmp_path)
    rows, status = run_until_idle(spark, JOIN.format(fmt="json", dir=tmp_path, extra=""), tmp_path)
    assert sorted((r["k"], r["va"], r["vb"]) for r in rows) == [(1, "a1", "b1"), (2, "a2", "b2"), (3, "a3", "b3")]
    assert status["inputs"]["a"]["rows_read"] == 3 and status["inputs"]["a"]["rejected_rows"] == 4
    assert status["rejected_rows"] == 4 and status["inputs"]["b"]["rejected_rows"] == 0
    folder = Path(status["inputs"]["a"]["rejected_rows_output"])
    assert folder == tmp_path / "out" / "rejected" / "a"
    source = str(tmp_path / "a" / "p1.json")
    got = rejected_records(folder)
    assert [(r["input"], r["source"], r["line"], r["raw"]) for r in got] == [("a", source, n, A_LINES[n - 1]) for n in (3, 4, 5, 6)]
    assert got[0]["reason"] == "malformed JSON: Expecting value" and got[0]["column"] == 16
    assert got[1]["reason"] == 'column k: "notanint" does not read as int32'
    assert got[2]["reason"] == "no rowtime: ta is missing or NULL"
    assert got[3]["reason"].startswith('column ta: "yesterday-ish" does not read as timestamp')


def test_on_error_fail_stops_the_run_at_the_first_bad_row_naming_file_line_and_column(tmp_path):
    write_inputs(tmp_path)
    sql = tmp_path / "q.sql"
    sql.write_text(JOIN.format(fmt="json", dir=tmp_path, extra=", on_error = 'fail'"))
    done = streamjoin("run", sql, "--until-idle", "--output", tmp_path / "out")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"streamjoin: RejectedRow: {tmp_path / 'a' / 'p1.json'}:3:16: malformed JSON: Expecting value")
    assert read_output(tmp_path / "out") == []


def test_an_unknown_on_error_value_is_refused_before_anything_runs(tmp_path):
    write_inputs(tmp_path)
    sql = tmp_path / "q.sql"
    sql.write_text(JOIN.format(fmt="json", dir=tmp_path, extra=", on_error = 'ignore'"))
    done = streamjoin("run", sql, "--until-idle", "--output", tmp_path / "out")
    assert done.returncode != 0 and "on_error = 'ignore': use 'dead_letter'" in done.stderr


def test_csv_rows_with_the_wrong_number_of_fields_or_a_bad_value_are_rejected_by_line(spark, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "p1.csv").write_text(
        f"k,va,ta\n1,a1,{ts(1000)}\n2,a2\n3,a3,{ts(3000)},extra\nx,a4,{ts(3500)}\n5,a5,{ts(4000)}\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "p1.json").write_text("".join(json.dumps({"k": k, "vb": f"b{k}", "tb": ts(t)}) + "\n"
                                                    for k, t in ((1, 1100), (5, 4100))))
    rows, status = run_until_idle(spark, JOIN.format(fmt="csv", dir=tmp_path, extra=""), tmp_path)
    assert sorted((r["k"], r["vb"]) for r in rows) == [(1, "b1"), (5, "b5")]
    got = rejected_records(tmp_path / "out" / "rejected" / "a")
    assert [(r["line"], r["reason"]) for r in got] == [
        (3, "2 fields where the header has 3"), (4, "4 fields where the header has 3"),
        (5, 'column k: "x" does not read as int32')]
    assert got[0]["raw"] == "2,a2" and status["rejected_rows"] == 3


def schema():
    return pa.schema([("k", pa.int32()), ("v", pa.string()), ("t", pa.timestamp("ms"))])


def test_a_truncated_parquet_file_is_one_dead_letter_for_the_whole_file(tmp_path):
    import io

    buffer = io.BytesIO()
    pq.write_table(pa.table({"k": [1, 2], "v": ["x", "y"], "t": ["2024-01-01 00:00:00", "2024-01-01 00:00:01"]}), buffer)
    kept, rejected = read_lenient(buffer.getvalue()[:-20], "parquet", schema(), "t", "s3://landing/p.parquet", "a")
    assert kept.num_rows == 0
    assert [(r["source"], r["line"], r["raw"]) for r in rejected] == [("s3://landing/p.parquet", None, None)]
    assert rejected[0]["reason"].startswith("not a readable Parquet file")


def test_a_huge_line_is_rejected_with_its_raw_text_cut_and_saying_so(tmp_path):
    line = '{"k": 1, "v": "' + "x" * 200_000 + '", "t": oops}'
    kept, rejected = read_lenient((line + "\n").encode(), "json", schema(), "t", "f.json", "a")
    assert kept.num_rows == 0 and len(rejected[0]["raw"]) == 65_536
    assert rejected[0]["reason"].endswith(f"(line of {len(line)} characters; raw cut to the first 65536)")


def test_a_bound_row_and_blank_lines_are_not_rejected(tmp_path):
    text = f'\n{{"k": 1, "v": "x", "t": "{ts(0)}"}}\n\n{{"t": "{ts(5000)}", "_bound": true}}\n{{"k": 2}}\n'
    kept, rejected = read_lenient(text.encode(), "json", schema(), "t", "f.json", "a")
    assert kept.num_rows == 2 and kept.column("_bound").to_pylist() == [False, True]
    assert [(r["line"], r["reason"]) for r in rejected] == [(5, "no rowtime: t is missing or NULL")]


def test_the_first_rejected_row_reads_as_file_line_column_and_reason():
    error = RejectedRow({"source": "in/p1.json", "line": 3, "column": 15, "reason": "malformed JSON: Expecting value"})
    assert str(error) == "in/p1.json:3:15: malformed JSON: Expecting value"
    with pytest.raises(RejectedRow, match=r"^f.csv:2: 2 fields"):
        raise RejectedRow({"source": "f.csv", "line": 2, "column": None, "reason": "2 fields where the header has 3"})


def test_a_table_row_that_cannot_be_read_fails_the_table_naming_file_and_line(tmp_path):
    from streamjoin.io.sources.tables import read_files

    folder = tmp_path / "city_info"
    folder.mkdir()
    (folder / "cities.csv").write_text("city,population\nBerlin,3600000\nParis,lots\n")
    with pytest.raises(RejectedRow) as failed:
        read_files(str(folder), "csv", pa.schema([("city", pa.string()), ("population", pa.int64())]))
    assert str(failed.value) == f'{folder / "cities.csv"}:3: column population: "lots" does not read as int64'


def test_a_rowtime_beyond_future_limit_is_a_dead_letter_and_cannot_make_the_other_rows_late(spark, tmp_path):
    """One producer's clock a year ahead would move the clock past every later row (all late)."""
    import datetime as dt

    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    stamp = lambda t: t.strftime("%Y-%m-%d %H:%M:%S.000")  # noqa: E731
    rows = [{"k": 1, "va": "a1", "ta": stamp(now - dt.timedelta(minutes=5))},
            {"k": 2, "va": "bad clock", "ta": stamp(now + dt.timedelta(days=365))},
            {"k": 3, "va": "a3", "ta": stamp(now - dt.timedelta(minutes=4))}]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "p1.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "p1.json").write_text("".join(json.dumps({"k": r["k"], "vb": f"b{r['k']}", "tb": r["ta"]}) + "\n"
                                                    for r in (rows[0], rows[2])))
    sql = JOIN.format(fmt="json", dir=tmp_path, extra=", future_limit = '1 HOUR'")
    out, status = run_until_idle(spark, sql, tmp_path)
    assert sorted((r["k"], r["vb"]) for r in out) == [(1, "b1"), (3, "b3")]
    assert status["inputs"]["a"]["late_rows"] == 0 and status["inputs"]["a"]["rejected_rows"] == 1
    (letter,) = rejected_records(tmp_path / "out" / "rejected" / "a")
    assert letter["line"] == 2 and "is more than future_limit (3600000 ms) ahead of the wall clock" in letter["reason"]


def test_a_bad_future_limit_is_rejected_by_check_at_its_statement(tmp_path):
    sql = tmp_path / "q.sql"
    sql.write_text(JOIN.format(fmt="json", dir=tmp_path, extra=", future_limit = 'soon'"))
    done = streamjoin("check", sql)
    assert done.returncode == 2 and "bad future_limit 'soon'" in done.stderr and f"{sql}:2:" in done.stderr


def test_a_json_line_that_is_not_an_object_and_a_record_where_a_number_is_declared_are_dead_letters():
    text = (f'[1, 2]\n42\n{{"k": {{"a": 1}}, "v": "x", "t": "{ts(0)}"}}\n'
            f'{{"k": 3, "v": "y", "t": "{ts(1000)}"}}\n')
    kept, rejected = read_lenient(text.encode(), "json", schema(), "t", "f.json", "a")
    assert kept.column("k").to_pylist() == [3]
    assert [(r["line"], r["reason"].split(":")[0]) for r in rejected] == [
        (1, "not a JSON object"), (2, "not a JSON object"), (3, "column k")]


def test_a_record_is_read_into_a_struct_column_and_as_its_json_into_a_text_column():
    declared = pa.schema([("r", pa.struct([("incr", pa.int32())])), ("v", pa.string()), ("t", pa.timestamp("us", tz="UTC"))])
    text = f'{{"r": {{"incr": 7}}, "v": {{"any": [1]}}, "t": "{ts(0)}"}}\n'
    kept, rejected = read_lenient(text.encode(), "json", declared, "t", "f.json", "a")
    assert not rejected and kept.column("r").to_pylist() == [{"incr": 7}] and kept.column("v").to_pylist() == ['{"any": [1]}']


def test_an_empty_file_gives_no_rows_and_no_dead_letters():
    for data in (b"", b"\n\n"):
        kept, rejected = read_lenient(data, "json", schema(), "t", "f.json", "a")
        assert kept.num_rows == 0 and rejected == []
