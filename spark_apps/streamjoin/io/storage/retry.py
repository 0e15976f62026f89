"""Riding out a storage outage: the S3 sink and the S3 landing-zone reader retry an operation
that failed because the storage could not be reached (connection refused or reset, a timeout,
a 5xx or throttling answer), with backoff (0.5 s doubling to 10 s), for up to a limit; then the
error is raised with what it was and for how long it lasted (`StorageUnavailableError`), and the
query fails as for any other error (and resumes cleanly from its checkpoint on restart).

The limit is `STREAMJOIN_STORAGE_RETRY_S` (default 300 s; 0 retries nothing), read into
`Settings.storage_retry_s` and set here by `runtime.pipeline.Pipeline` at the entry point. Only
storage errors are retried: a missing object, a bad credential or a bad row fail at once.

>>> transient(ConnectionRefusedError(111, "Connection refused"))
True
>>> transient(OSError("When reading information for key 'a' in bucket 'b': AWS Error NETWORK_CONNECTION during HeadObject"))
True
>>> transient(FileNotFoundError("no such file"))
False
>>> transient(ValueError("column k does not read as int32"))
False
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger("streamjoin.storage")

T = TypeVar("T")
DEFAULT_LIMIT_S = 300.0
_limit_s = DEFAULT_LIMIT_S

# what pyarrow's, deltalake's (object_store), botocore's and Spark's wrapping of them say when
# the endpoint is not there or not answering
_UNREACHABLE = re.compile(
    r"connection refused|connection reset|connection aborted|broken pipe|could not connect|couldn't connect|"
    r"failed to connect|connect timeout|connecttimeout|timed out|timeout|network_connection|error sending request|"
    r"endpointconnectionerror|could not establish|temporarily unavailable|service unavailable|slowdown|slow down|"
    r"internalerror|internal server error|(status|code|http)\D{0,12}50[0234]|dns error|name or service not known|"
    r"unreachable",
    re.IGNORECASE,
)
_NOT_STORAGE = (ValueError, TypeError, KeyError, IndexError, AttributeError, FileNotFoundError, PermissionError)


class StorageUnavailableError(RuntimeError):
    """The storage stayed unreachable for longer than the retry limit."""


def configure(limit_s: float) -> None:
    """How long to retry an unreachable storage before failing (seconds; 0: do not retry)."""
    global _limit_s
    _limit_s = max(0.0, float(limit_s))


def transient(error: BaseException) -> bool:
    """Whether `error` says the storage could not be reached (worth retrying), as opposed to an
    answer (no such key, access denied) or a bug."""
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    if isinstance(error, _NOT_STORAGE):
        return False
    return bool(_UNREACHABLE.search(f"{type(error).__name__}: {error}"))


def retrying(what: str, action: Callable[[], T], limit: float | None = None, sleep=time.sleep, clock=time.monotonic) -> T:
    """`action()`, again after each storage error (`transient`) until it succeeds or `limit`
    seconds (default: the configured limit) have passed since the first failure."""
    limit = _limit_s if limit is None else limit
    first, delay = None, 0.5
    while True:
        try:
            result = action()
        except Exception as error:
            if not transient(error):
                raise
            now = clock()
            first = now if first is None else first
            if now - first >= limit:
                raise StorageUnavailableError(f"{what}: the storage was unreachable for {now - first:.0f} s "
                                         f"(STREAMJOIN_STORAGE_RETRY_S={limit:g}): {first_line(error)}") from error
            log.warning("%s: storage unreachable, retrying in %.1f s (%.0f s of %g s): %s", what, delay, now - first, limit,
                        first_line(error))
            sleep(delay)
            delay = min(delay * 2, 10.0)
            continue
        if first is not None:
            log.warning("%s: storage reachable again after %.0f s", what, clock() - first)
        return result


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300] if text else ''}"
