"""SQL text -> the checked, rewritten plan every later layer uses.

>>> script = compile_sql("CREATE STREAM s (k INT) WITH (connector = 'files', path = '/in'); SELECT STREAM k FROM s;")
>>> script.final.inputs[0].relation
's'
"""

from __future__ import annotations

from streamjoin.plan.analyzer.statements import analyze
from streamjoin.plan.model import Script
from streamjoin.plan.rewrites import REWRITES


def compile_sql(sql: str, filename: str = "<sql>", declared: tuple[tuple[str, str], ...] = ()) -> Script:
    """Analyse a SQL file (SqlError with its position if rejected), then apply the rewrites.
    `declared`: inputs declared outside the file (`streamjoin.plan.inputs.declarations`)."""
    script = analyze(sql, filename, declared)
    for rewrite in REWRITES:
        script = rewrite(script)
    return script
