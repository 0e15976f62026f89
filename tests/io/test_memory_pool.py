"""Arrow's memory pool in a driver (io.storage.memory.lean_pool): jemalloc, which hands freed pages back,
for the driver and the Python workers it starts, unless the operator chose one; glibc's mmap
threshold fixed (io.storage.memory.lean_heap), so large freed arrays leave the process."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = ("import os, pyarrow as pa; from streamjoin.io.storage.memory import lean_pool; lean_pool(); "
         "print(pa.default_memory_pool().backend_name, os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))")


def pool_of(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_a_driver_makes_jemalloc_its_pool_and_its_workers():
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert pool_of(env) == "jemalloc jemalloc"  # the variable is what Spark's Python workers inherit


def test_an_operators_choice_of_pool_stands():
    assert pool_of({**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}) == "system system"


HEAP = ("import os; from streamjoin.io.storage.memory import lean_heap; "
        "print(lean_heap(), os.environ.get('MALLOC_MMAP_THRESHOLD_'))")


def test_a_driver_fixes_glibcs_mmap_threshold_for_itself_and_its_workers_unless_the_operator_set_one():
    def heap(env: dict[str, str]) -> str:
        return subprocess.run([sys.executable, "-c", HEAP], env=env, capture_output=True, text=True, check=True).stdout.strip()

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    assert heap(env) == "True 1048576"  # (this machine's C library is glibc)
    assert heap({**env, "MALLOC_MMAP_THRESHOLD_": "65536"}) == "False 65536"
