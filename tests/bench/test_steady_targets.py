"""The report's targets of the steady runs (bench/run.py, issue 42): EMIT EAGER's p50 and p99
against Flink's, EMIT FINAL's p99 against the lateness + 0.5 s and its CPU per row against Flink's."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import run


def steady(engine: str, query: str, p50: float, p99: float, cpu: float) -> dict:
    return {"engine": engine, "operator": "auto" if engine == "streamjoin" else "-", "rate": 2000, "window_s": 60,
            "seconds": 60, "rows_in": 1, "rows_out": 1, "p50_ms": p50, "p99_ms": p99, "cpu_us_per_row": cpu, "query": query}


def test_steady_targets_judge_eager_latency_against_flink_and_final_against_the_lateness():
    runs = [steady("flink", "interval", 800, 1000, 90), steady("streamjoin", "interval", 2100, 2600, 80),
            steady("streamjoin", "eager", 700, 1100, 100)]
    lines = run.target_lines({}, [], runs)
    assert "| steady 2,000 rows/s, EMIT FINAL: p99 | 2,600.0 ms | <= lateness + 0.5 s (2,500 ms) | no |" in lines
    assert "| steady 2,000 rows/s, EMIT FINAL: CPU per row | 80.0 us | <= Flink's 90.0 us | yes |" in lines
    assert "| steady 2,000 rows/s, EMIT EAGER: p50 | 700.0 ms | < Flink's 800.0 ms | yes |" in lines
    assert "| steady 2,000 rows/s, EMIT EAGER: p99 | 1,100.0 ms | < Flink's 1,000.0 ms | no |" in lines
    table = run.steady_lines(runs, {"argv": ["--steady", "2000"], "started": "now"})
    assert any("| streamjoin | auto | EAGER | 0.70 s | 1.10 s |" in line and "p50 and p99 < Flink's: not met" in line for line in table)


def test_a_new_report_keeps_the_hour_long_full_window_runs_of_the_one_it_replaces(tmp_path):
    full = {**steady("streamjoin", "interval", 900, 2300, 22), "rate": 10000, "window_s": 3600, "measured_from_s": 3600}
    saved = tmp_path / "benchmarks.json"
    saved.write_text(run.json.dumps({"meta": {}, "results": [], "steady": [steady("flink", "interval", 800, 1000, 90), full]}))
    assert run.kept_full_windows(saved) == [full]  # the 60 s runs are measured again by the new run
    assert run.kept_full_windows(tmp_path / "none.json") == []
