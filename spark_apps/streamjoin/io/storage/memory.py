"""Handing freed memory back to the system after a large read or write.

Arrow's allocator (mimalloc in pyarrow's wheels) and glibc's malloc keep what a large read freed
for later use: reading a 55 MB JSON Lines file left the process ~200 MB larger after its table
was gone (bench inner-dense: two such inputs, then the join). A long run reuses that memory, but
a bounded run's peak is the sum of what each stage kept. `give_back` returns it: Arrow's pool
releases its unused pages, glibc trims its heap.

`lean_pool` makes jemalloc Arrow's pool in the driver and in Spark's Python workers (unless
ARROW_DEFAULT_MEMORY_POOL names one): it returns freed pages by itself within a second, where
mimalloc keeps them (issue 42: measured in `docs/deployment.md`).

`lean_heap` fixes glibc's threshold for serving an allocation by its own mapping at 1 MB (unless
MALLOC_MMAP_THRESHOLD_ is set): glibc raises it as large blocks are freed, after which numpy's
large arrays come from the heap, and a heap freed in the middle stays with the process. The
keyed probe's index (`lower.batch.interval_probe`) merges and drops arrays of millions of rows all
the time: replaying 6M rows, 68 bytes of RSS a row held 49, and 55 with the threshold fixed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

LARGE_ROWS = 262_144  # a read or write of at least this many rows gives back what it freed

_libc = None
MMAP_THRESHOLD = 1 << 20  # glibc's M_MMAP_THRESHOLD as lean_heap fixes it
_M_MMAP_THRESHOLD = -3  # (mallopt's parameter, malloc.h)


def _c():
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
        except OSError:
            _libc = False
    return _libc


def give_back(rows: int | None = None) -> None:
    """Return the memory Arrow's pool and glibc's malloc hold unused to the system; with `rows`
    (how many a read or write just handled), only when they were at least LARGE_ROWS."""
    if rows is not None and rows < LARGE_ROWS:
        return
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    libc = _c()
    if libc and hasattr(libc, "malloc_trim"):  # glibc only
        libc.malloc_trim(0)


def lean_heap() -> bool:
    """Fix glibc's mmap threshold of this process at MMAP_THRESHOLD (and of the processes it starts,
    by the variable glibc reads at their start), unless MALLOC_MMAP_THRESHOLD_ is set; whether it
    was fixed (not on another C library)."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return False
    libc = _c()
    if not libc or not hasattr(libc, "mallopt") or not hasattr(libc, "malloc_trim"):  # glibc only
        return False
    if libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:
        return False
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    return True


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
