"""The benchmark's interval join in Flink SQL (PyFlink, streaming mode), every result row to
stdout by Flink's `print` connector. Runs in bench/.venv-flink (bench/requirements-flink.txt),
never in the project's environment.

    bench/.venv-flink/bin/python bench/flink_job.py L_DIR R_DIR INNER|FULL WINDOW_MS
    bench/.venv-flink/bin/python bench/flink_job.py L_DIR R_DIR INNER3 WINDOW_MS M_DIR
    bench/.venv-flink/bin/python bench/flink_job.py L_DIR TABLE_DIR SNAPSHOT WINDOW_MS
    bench/.venv-flink/bin/python bench/flink_job.py L_DIR CHANGES_DIR CHANGING WINDOW_MS
    bench/.venv-flink/bin/python bench/flink_job.py L_DIR TABLE_DIR SEMI|ANTI WINDOW_MS
    bench/.venv-flink/bin/python bench/flink_job.py NEXMARK_DIR - NEXMARK-Q3|NEXMARK-Q8|NEXMARK-Q20 0

INNER3 is the three-stream workload: `l JOIN m ... JOIN r ...`, both interval conditions on l's
rowtime. An interval join keeps its inputs' time attributes, so the second join is an interval
join too (state dropped by the watermark), not a regular join.

NEXMARK-Qn runs Nexmark's query n (bench/nexmark.py: the tables and the SQL, the same files
streamjoin reads) with every result row to stdout.

SNAPSHOT joins the stream with a table (`id`, `name`, `price`) read as a bounded filesystem
source: a regular join, which keeps both inputs in state (Flink SQL's lookup join needs a lookup
source such as JDBC; the files have none).

CHANGING joins the stream with a table that changes, read from Debezium JSON events (format
`debezium-json`): a regular join whose output is a changelog (+I, -U, +U, -D printed).

SEMI and ANTI read SNAPSHOT's files as `WHERE EXISTS` / `WHERE NOT EXISTS (SELECT * FROM t WHERE
t.id = l.k)`: Flink's regular semi / anti join, its output a changelog (ANTI withdraws a row
written before its t row arrived).
"""

from __future__ import annotations

import sys

from pyflink.table import EnvironmentSettings, TableEnvironment


def main(left: str, right: str, join: str, window_ms: int, middle: str | None = None) -> None:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", "2")
    conf.set("table.exec.source.idle-timeout", "1 s")  # one file per stream: one reading subtask
    if join.startswith("NEXMARK-"):
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import nexmark

        query = join.split("-", 1)[1].lower()
        tables, select = nexmark.flink_sql(query, {name: Path(left) / name for name in nexmark.READS[query]})
        for table in tables:
            env.execute_sql(table)
        env.execute_sql(f"CREATE VIEW q AS {select}")
        env.from_path("q").execute_insert(_print_sink(env, query)).wait()
        return
    if join == "CHANGING":
        env.execute_sql(f"""
            CREATE TABLE l (rowtime TIMESTAMP(3), k INT, v INT)
            WITH ('connector' = 'filesystem', 'path' = '{left}', 'format' = 'json')""")
        env.execute_sql(f"""
            CREATE TABLE t (id INT, name STRING, price DOUBLE)
            WITH ('connector' = 'filesystem', 'path' = '{right}', 'format' = 'debezium-json')""")
        env.execute_sql("CREATE TABLE sink (k INT, lv INT, name STRING, price DOUBLE) WITH ('connector' = 'print')")
        env.execute_sql("INSERT INTO sink SELECT l.k, l.v, t.name, t.price FROM l JOIN t ON l.k = t.id").wait()
        return
    if join in ("SEMI", "ANTI"):
        env.execute_sql(f"""
            CREATE TABLE l (k INT, v INT) WITH ('connector' = 'filesystem', 'path' = '{left}', 'format' = 'json')""")
        env.execute_sql(f"""
            CREATE TABLE t (id INT, name STRING, price DOUBLE)
            WITH ('connector' = 'filesystem', 'path' = '{right}', 'format' = 'json')""")
        env.execute_sql("CREATE TABLE sink (k INT, lv INT) WITH ('connector' = 'print')")
        exists = "NOT EXISTS" if join == "ANTI" else "EXISTS"
        env.execute_sql(f"INSERT INTO sink SELECT l.k, l.v FROM l WHERE {exists} (SELECT * FROM t WHERE t.id = l.k)").wait()
        return
    if join == "SNAPSHOT":
        env.execute_sql(f"""
            CREATE TABLE l (rowtime TIMESTAMP(3), k INT, v INT, WATERMARK FOR rowtime AS rowtime)
            WITH ('connector' = 'filesystem', 'path' = '{left}', 'format' = 'json')""")
        env.execute_sql(f"""
            CREATE TABLE t (id INT, name STRING, price DOUBLE)
            WITH ('connector' = 'filesystem', 'path' = '{right}', 'format' = 'json')""")
        env.execute_sql("CREATE TABLE sink (rowtime TIMESTAMP(3), k INT, lv INT, name STRING, price DOUBLE) WITH ('connector' = 'print')")
        env.execute_sql("""
            INSERT INTO sink
            SELECT CAST(l.rowtime AS TIMESTAMP(3)), l.k, l.v, t.name, t.price FROM l JOIN t ON l.k = t.id
        """).wait()
        return
    inputs = [("l", left), ("r", right)] + ([("m", middle)] if join == "INNER3" else [])
    for name, path in inputs:
        env.execute_sql(f"""
            CREATE TABLE {name} (rowtime TIMESTAMP(3), k INT, v INT,
                                 WATERMARK FOR rowtime AS rowtime)
            WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json')""")
    seconds = window_ms / 1000
    if join == "INNER3":
        env.execute_sql("CREATE TABLE sink (rowtime TIMESTAMP(3), k INT, lv INT, mv INT, rv INT) WITH ('connector' = 'print')")
        env.execute_sql(f"""
            INSERT INTO sink
            SELECT CAST(l.rowtime AS TIMESTAMP(3)), l.k, l.v, m.v, r.v
            FROM l JOIN m ON l.k = m.k
             AND m.rowtime BETWEEN l.rowtime - INTERVAL '{seconds:g}' SECOND AND l.rowtime + INTERVAL '{seconds:g}' SECOND
            JOIN r ON l.k = r.k
             AND r.rowtime BETWEEN l.rowtime - INTERVAL '{seconds:g}' SECOND AND l.rowtime + INTERVAL '{seconds:g}' SECOND
        """).wait()
        return
    env.execute_sql("CREATE TABLE sink (rowtime TIMESTAMP(3), k INT, lv INT, rv INT) WITH ('connector' = 'print')")
    rowtime = "l.rowtime" if join == "INNER" else "COALESCE(l.rowtime, r.rowtime)"
    key = "l.k" if join == "INNER" else "COALESCE(l.k, r.k)"
    env.execute_sql(f"""
        INSERT INTO sink
        SELECT CAST({rowtime} AS TIMESTAMP(3)), {key}, l.v, r.v
        FROM l {join} JOIN r ON l.k = r.k
         AND r.rowtime BETWEEN l.rowtime - INTERVAL '{seconds:g}' SECOND AND l.rowtime + INTERVAL '{seconds:g}' SECOND
    """).wait()


def _print_sink(env, query: str) -> str:
    """A print table with the view's columns (time attributes as plain timestamps)."""
    schema = env.from_path("q").get_schema()
    columns = ", ".join(f"`{name}` {str(kind).replace(' *ROWTIME*', '')}"
                        for name, kind in zip(schema.get_field_names(), schema.get_field_data_types(), strict=True))
    env.execute_sql(f"CREATE TABLE sink_{query} ({columns}) WITH ('connector' = 'print')")
    return f"sink_{query}"


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:6])
