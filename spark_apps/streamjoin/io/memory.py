"""Handing freed memory back to the system after a large read or write.

Arrow's allocator (mimalloc in pyarrow's wheels) and glibc's malloc keep what a large read freed
for later use: reading a 55 MB JSON Lines file left the process ~200 MB larger after its table
was gone (bench inner-dense: two such inputs, then the join). A long run reuses that memory, but
a bounded run's peak is the sum of what each stage kept. `give_back` returns it: Arrow's pool
releases its unused pages, glibc trims its heap.

`lean_pool` makes jemalloc Arrow's pool in the driver and in Spark's Python workers (unless
ARROW_DEFAULT_MEMORY_POOL names one): it returns freed pages by itself within a second, where
mimalloc keeps them (issue 42: measured in `docs/deployment.md`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

LARGE_ROWS = 262_144  # a read or write of at least this many rows gives back what it freed

_libc = None


def give_back(rows: int | None = None) -> None:
    """Return the memory Arrow's pool and glibc's malloc hold unused to the system; with `rows`
    (how many a read or write just handled), only when they were at least LARGE_ROWS."""
    global _libc
    if rows is not None and rows < LARGE_ROWS:
        return
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
        except OSError:
            _libc = False
    if _libc and hasattr(_libc, "malloc_trim"):  # glibc only
        _libc.malloc_trim(0)


def lean_pool() -> None:
    """jemalloc as Arrow's default memory pool of this process and of the processes it starts
    (Spark's Python workers inherit the variable), unless ARROW_DEFAULT_MEMORY_POOL is set or this
    pyarrow has no jemalloc."""
    import pyarrow as pa

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without it
        return
    pa.set_memory_pool(pool)
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "jemalloc"
