"""Arrow's memory pool in a driver (io.memory.lean_pool): jemalloc, which hands freed pages back,
for the driver and the Python workers it starts, unless the operator chose one."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = ("import os, pyarrow as pa; from streamjoin.io.memory import lean_pool; lean_pool(); "
         "print(pa.default_memory_pool().backend_name, os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))")


def pool_of(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_a_driver_makes_jemalloc_its_pool_and_its_workers():
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert pool_of(env) == "jemalloc jemalloc"  # the variable is what Spark's Python workers inherit


def test_an_operators_choice_of_pool_stands():
    assert pool_of({**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}) == "system system"
