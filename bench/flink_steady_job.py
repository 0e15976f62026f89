"""The steady-state interval join in Flink SQL (PyFlink, streaming mode): folders read
continuously (`source.monitor-interval` 1 s), WATERMARK rowtime - LATENESS, every join row to
stdout by the `print` connector. Runs until killed, in bench/.venv-flink.

    bench/.venv-flink/bin/python bench/flink_steady_job.py L_DIR R_DIR WINDOW_MS LATENESS_S
"""

from __future__ import annotations

import sys

from pyflink.table import EnvironmentSettings, TableEnvironment


def main(left: str, right: str, window_ms: int, lateness_s: int) -> None:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", "2")
    conf.set("table.exec.source.idle-timeout", "1 s")
    for name, path in (("l", left), ("r", right)):
        env.execute_sql(f"""
            CREATE TABLE {name} (rowtime TIMESTAMP(3), k BIGINT, v BIGINT,
                                 WATERMARK FOR rowtime AS rowtime - INTERVAL '{lateness_s}' SECOND)
            WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json',
                  'source.monitor-interval' = '1 s')""")
    env.execute_sql("CREATE TABLE sink (rowtime TIMESTAMP(3), k BIGINT, lv BIGINT, rv BIGINT) WITH ('connector' = 'print')")
    seconds = window_ms / 1000
    env.execute_sql(f"""
        INSERT INTO sink
        SELECT CAST(l.rowtime AS TIMESTAMP(3)), l.k, l.v, r.v
        FROM l JOIN r ON l.k = r.k
         AND r.rowtime BETWEEN l.rowtime - INTERVAL '{seconds:g}' SECOND AND l.rowtime + INTERVAL '{seconds:g}' SECOND
    """).wait()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
