"""A bounded run of a regular join (RisingWave's join without a time bound) of two aggregating
stream views, Nexmark q8's shape: each view runs as a part of its own (lower.staged_views) and the
join of their rows runs on Spark's batch engine (lower.batch.batch_join), as a join of two streams read
directly does; its rows are the SQL answer."""

from __future__ import annotations

import datetime as dt
import random

from runtime_helpers import read_output, run_to_end, write_jsonl
from streamjoin.lower.explain import explain_text
from streamjoin.lower.strategy import LoweringOptions
from streamjoin.runtime.pipeline import Pipeline

Q8 = """
CREATE SOURCE person (id BIGINT, name VARCHAR, date_time TIMESTAMP, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
  WITH (connector = 'files', path = '{d}/person') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE auction (id BIGINT, seller BIGINT, date_time TIMESTAMP, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
  WITH (connector = 'files', path = '{d}/auction') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW q8 AS
SELECT P.id, P.name, P.starttime
FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
      FROM TUMBLE(person, date_time, INTERVAL '10' SECOND) GROUP BY id, name, window_start, window_end) P
JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
      FROM TUMBLE(auction, date_time, INTERVAL '10' SECOND) GROUP BY seller, window_start, window_end) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
"""
START = dt.datetime(2026, 11, 29, 12, 0)


def events(rng: random.Random) -> tuple[list[dict], list[dict]]:
    """People registering and auctions opening over two minutes, in time order (a second or two of
    disorder), some sellers in the window they registered in."""
    people, auctions = [], []
    for n in range(60):
        at = START + dt.timedelta(milliseconds=2000 * n + rng.randrange(0, 1500))
        people.append({"id": n % 25, "name": f"p{n % 25}", "date_time": at.isoformat(sep=" ")})
        for _ in range(rng.randrange(0, 3)):
            later = at + dt.timedelta(milliseconds=rng.randrange(0, 12_000))
            auctions.append({"id": len(auctions), "seller": rng.choice([n % 25, rng.randrange(0, 40)]),
                             "date_time": later.isoformat(sep=" ")})
    auctions.sort(key=lambda a: a["date_time"])
    return people, auctions


def answer(people: list[dict], auctions: list[dict]) -> set[tuple]:
    def window(text: str) -> dt.datetime:
        t = dt.datetime.fromisoformat(text)
        return t - dt.timedelta(seconds=t.second % 10, microseconds=t.microsecond)

    opened = {(a["seller"], window(a["date_time"])) for a in auctions}
    return {(p["id"], p["name"], window(p["date_time"])) for p in people if (p["id"], window(p["date_time"])) in opened}


def run_until_idle(spark, sql: str, workdir, settings=None) -> tuple[list[dict], dict]:
    pipeline = Pipeline.from_sql(sql, "q8.sql", settings, dialect="risingwave")
    status = run_to_end(pipeline.runner(spark, workdir / "checkpoint", str(workdir / "out"), until_idle=True).start())
    return read_output(workdir / "out"), status


def test_a_bounded_regular_join_of_two_aggregating_views_runs_on_the_batch_engine_and_gives_the_sql_answer(spark, tmp_path):
    people, auctions = events(random.Random("q8-batch"))
    write_jsonl(tmp_path / "person" / "a.json", people[:30])
    write_jsonl(tmp_path / "person" / "b.json", people[30:])
    write_jsonl(tmp_path / "auction" / "a.json", auctions)
    sql = Q8.format(d=tmp_path)
    script = Pipeline.from_sql(sql, "q8.sql", dialect="risingwave").script
    assert "(the run is bounded)" in explain_text(script)
    assert "operator: streamjoin's batch" in explain_text(script, LoweringOptions(bounded=True))
    batch, status = run_until_idle(spark, sql, tmp_path / "batch")

    def rows(out: list[dict]) -> set[tuple]:
        return {(r["id"], r["name"], dt.datetime.fromisoformat(r["starttime"])) for r in out}

    want = answer(people, auctions)
    assert len(want) >= 5 and len(batch) == len(want) and status["late_rows"] == 0
    assert rows(batch) == want  # (the operator's regular joins are checked against the same SQL in test_regular_joins.py)


def test_a_bounded_runs_aggregating_views_are_one_batch_job_each_and_a_rerun_after_a_failure_writes_each_row_once(
        spark, tmp_path, monkeypatch):
    """A bounded run computes each aggregating view once its inputs have ended, as one Spark batch
    job (no streaming query: its part's checkpoint holds no offsets), and its sink records that job
    as batch 0: the join failing after the views were written, a rerun on the same checkpoint
    neither computes nor stages them again, and every row of the answer comes out once."""
    from streamjoin.lower.batch.batch_sink import BatchJoinSink
    from streamjoin.runtime.runner import OnceQuery

    people, auctions = events(random.Random("q8-once"))
    # a person 30 s late (beyond the 4 s lateness): set aside as late by staging, in either kind of part
    late = {"id": 3, "name": "p3", "date_time": (START + dt.timedelta(seconds=5)).isoformat(sep=" ")}
    write_jsonl(tmp_path / "person" / "a.json", people[:40])
    write_jsonl(tmp_path / "person" / "b.json", [late, *people[40:]])
    write_jsonl(tmp_path / "auction" / "a.json", auctions)
    sql = Q8.format(d=tmp_path)
    pipeline = Pipeline.from_sql(sql, "q8.sql", dialect="risingwave")
    checkpoint, out = tmp_path / "run" / "checkpoint", tmp_path / "run" / "out"

    advance, ran = BatchJoinSink.advance, OnceQuery.ran
    done = []

    def fail(self):  # once both views are written
        if len(done) == 2:
            raise RuntimeError("the join fails once")
        advance(self)

    def count(self, duration_ms):
        done.append(duration_ms)
        ran(self, duration_ms)

    monkeypatch.setattr(BatchJoinSink, "advance", fail)
    monkeypatch.setattr(OnceQuery, "ran", count)
    runner = pipeline.runner(spark, checkpoint, str(out), until_idle=True).start()
    try:
        runner.process_available()
        runner.end_of_input()
        raise AssertionError("the join did not fail")
    except RuntimeError as error:
        assert "fails once" in str(error)
        runner.fail(error)
    parts = sorted((checkpoint / "stages").iterdir())
    assert len(parts) == 2 and all(not list((p / "spark" / "offsets").glob("*")) for p in parts)
    staged = {p.name: sorted(f.name for f in (p / "rows").glob("*.parquet")) for p in parts}
    assert all(staged.values())  # the views' rows are written before the join runs
    monkeypatch.setattr(BatchJoinSink, "advance", advance)
    status = run_to_end(pipeline.runner(spark, checkpoint, str(out), until_idle=True).start())
    assert {p.name: sorted(f.name for f in (p / "rows").glob("*.parquet")) for p in parts} == staged
    assert len(done) == 2  # the rerun computed neither view again
    got = [(r["id"], r["name"], dt.datetime.fromisoformat(r["starttime"])) for r in read_output(out)]
    assert len(got) == len(set(got)) and set(got) == answer(people, auctions)
    assert status["late_rows"] == 1
