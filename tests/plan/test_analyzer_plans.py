"""Plans for the constructs the seeds do not show in full: views, sinks, HOP, GROUP BY, EMIT."""

from streamjoin.plan import compile_sql
from streamjoin.plan import model as m
from streamjoin.plan.windows import BucketWindow, RangeWindow

SALES = """CREATE STREAM sales (city VARCHAR, amount DECIMAL(10, 2)) WITH (connector = 'files', format = 'json', path = '/in/sales');
CREATE TABLE city_info (city VARCHAR PRIMARY KEY, region VARCHAR) WITH (connector = 'files', format = 'csv', path = '/in/cities');
CREATE SINK enriched WITH (connector = 's3', path = 's3://out/enriched', format = 'delta', partitioned_by = 'hour');
CREATE VIEW city_sales AS
  SELECT STREAM FLOOR(ROWTIME TO HOUR) AS hour_start, city, SUM(amount) AS total, COUNT(*) AS n
  FROM sales GROUP BY FLOOR(ROWTIME TO HOUR), city;
INSERT INTO enriched
SELECT STREAM ROWTIME, ci.city, ci.region, cs.total
FROM city_sales OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW) AS cs
RIGHT OUTER JOIN city_info AS ci ON cs.city = ci.city
EMIT FINAL;
"""


def test_the_hourly_enrichment_shape_is_a_bucketed_join_over_an_aggregating_view():
    script = compile_sql(SALES)
    view, query = script.queries
    assert view.name == "city_sales" and view.kind == m.Kind.STREAM
    agg = view.aggregation
    assert (m.sql(agg.bucket), agg.bucket_unit, [m.sql(k) for k in agg.keys]) == ("FLOOR(ROWTIME TO HOUR)", "HOUR", ["FLOOR(ROWTIME TO HOUR)", "sales.city"])
    assert query.sink == "enriched"
    assert query.input("cs").window == BucketWindow("HOUR")
    assert query.joins[0].kind == m.JoinKind.BUCKETED and query.joins[0].join_type == "RIGHT"
    assert [c.name for c in query.output] == ["rowtime", "city", "region", "total"]
    [sink] = script.sinks
    assert dict(sink.options) == {"connector": "s3", "path": "s3://out/enriched", "format": "delta", "partitioned_by": "hour"}


def test_stream_options_lateness_and_rowtime_are_read_from_with():
    script = compile_sql(
        "CREATE STREAM s (k INT, event_time TIMESTAMP) WITH (connector = 'files', format = 'csv', path = '/x', "
        "rowtime = 'event_time', lateness = '10 SECONDS');\nSELECT STREAM * FROM s;"
    )
    [s] = script.relations
    assert (s.rowtime, s.lateness_ms, s.implicit_rowtime) == ("event_time", 10_000, False)
    assert s.option("format") == "csv"


def test_hop_window_join_is_classified_with_its_slide_and_size():
    q = compile_sql(
        "CREATE STREAM a (k INT, ts TIMESTAMP) WITH (rowtime = 'ts'); CREATE STREAM b (k INT, ts TIMESTAMP) WITH (rowtime = 'ts');\n"
        "SELECT a.k FROM HOP(a, ts, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) "
        "FULL JOIN HOP(b, ts, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) ON a.k = b.k AND a.window_start = b.window_start;"
    ).final
    assert q.joins[0].kind == m.JoinKind.WINDOW_TVF and q.joins[0].join_type == "FULL"
    assert q.input("a").time_window == m.TimeWindowFunction("HOP", "ts", 300_000, 60_000)


def test_lenses_durations_read_as_intervals():
    for text, ms in (("5s", 5_000), ("5m", 300_000), ("1h", 3_600_000), ("250ms", 250)):
        q = compile_sql(f"CREATE STREAM a (k INT); CREATE STREAM b (k INT);\nSELECT STREAM * FROM a JOIN b ON a.k = b.k WITHIN {text};").final
        assert q.input("a").window == q.input("b").window == RangeWindow(ms), text


def test_emit_mode_is_carried_into_the_plan():
    for mode in ("FINAL", "EAGER", "CHANGES"):
        q = compile_sql(f"CREATE STREAM a (k INT); CREATE STREAM b (k INT);\nSELECT STREAM * FROM a LEFT JOIN b ON a.k = b.k EMIT {mode};").final
        assert q.emit == mode


def test_three_way_join_keeps_each_condition_on_its_own_join():
    q = compile_sql(
        "CREATE STREAM a (k INT, x INT); CREATE STREAM b (k INT, y INT); CREATE STREAM c (k INT, z INT);\n"
        "SELECT STREAM a.x, b.y, c.z FROM a OVER (RANGE INTERVAL '1' MINUTE PRECEDING) "
        "JOIN b OVER (RANGE INTERVAL '1' MINUTE PRECEDING) USING (k) "
        "LEFT JOIN c OVER (RANGE INTERVAL '30' SECOND PRECEDING) USING (k);"
    ).final
    first, second = q.joins
    assert [(m.sql(a), m.sql(b)) for a, b in first.condition.keys] == [("a.k", "b.k")]
    assert [(m.sql(a), m.sql(b)) for a, b in second.condition.keys] == [("COALESCE(a.k, b.k)", "c.k")]
    assert {(b.left, b.right) for b in second.condition.time_bounds} == {("a", "c"), ("b", "c")}


def test_star_keeps_columns_a_using_join_did_not_merge():
    q = compile_sql(
        "CREATE STREAM a (k INT, x INT); CREATE STREAM b (k INT, y INT); CREATE STREAM c (k INT, z INT);\n"
        "SELECT STREAM * FROM a JOIN b USING (k) JOIN c ON a.k = c.k;"
    ).final
    assert [(c.name, m.sql(c.expression)) for c in q.output] == [
        ("k", "COALESCE(a.k, b.k)"), ("x", "a.x"), ("y", "b.y"), ("c.k", "c.k"), ("z", "c.z"),
    ]


def test_group_by_floor_of_a_named_rowtime_column_is_a_time_bucket():
    ddl = "CREATE STREAM s (k INT, amt INT, ts TIMESTAMP) WITH (rowtime = 'ts');\n"
    for bucket in ("FLOOR(s.ROWTIME TO HOUR)", "FLOOR(ts TO HOUR)", "FLOOR(ROWTIME TO HOUR)"):
        q = compile_sql(ddl + f"SELECT STREAM {bucket} AS h, k, SUM(amt) AS total FROM s GROUP BY {bucket}, k;").final
        assert q.aggregation.bucket_unit == "HOUR", bucket


def test_bucket_window_may_name_the_rowtime_column():
    q = compile_sql(
        "CREATE STREAM s (k INT, ts TIMESTAMP) WITH (rowtime = 'ts'); CREATE TABLE t (k INT PRIMARY KEY);\n"
        "SELECT STREAM * FROM s OVER (ORDER BY FLOOR(ts TO HOUR) RANGE CURRENT ROW) RIGHT JOIN t USING (k);"
    ).final
    assert q.input("s").window == BucketWindow("HOUR") and q.joins[0].kind == m.JoinKind.BUCKETED


def test_within_with_a_multi_field_interval_reads_back():
    from streamjoin.dialect import parse_script, to_sql

    sql = "SELECT STREAM * FROM a JOIN b ON a.k = b.k WITHIN INTERVAL '1:30' MINUTE TO SECOND"
    [tree] = parse_script(sql)
    assert to_sql(parse_script(to_sql(tree))[0]) == to_sql(tree)
    q = compile_sql("CREATE STREAM a (k INT); CREATE STREAM b (k INT);\n" + sql).final
    assert q.input("a").window == RangeWindow(90_000)
