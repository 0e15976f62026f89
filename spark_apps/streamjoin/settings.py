"""Settings from the environment, read once at an entry point (the CLI, the app runner, a test)
and passed in: no module below reads the environment for them.

>>> Settings.from_env({"STREAMJOIN_JOIN_OPERATOR": "custom"}).join_operator
'custom'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

JOIN_OPERATORS = ("auto", "native", "custom", "batch")
BATCH_PROBES = ("auto", "keyed", "scan")
PROBE_PLACES = ("auto", "driver", "tasks")


@dataclass(frozen=True)
class Settings:
    # Spark (runtime.session)
    spark_master: str | None = None  # None: local[<cores>], unless spark-submit set one
    driver_memory: str = "2g"
    # extra JVM options of a driver this process starts (spark.driver.extraJavaOptions; under
    # spark-submit, its --driver-java-options stand): the tests use a quick-starting JIT
    driver_java_options: str | None = None
    # the driver JVM's class-data sharing archive (runtime.class_archive): a path, `off`, or None
    # (the one `make setup` builds in the Python environment, when it is there)
    class_archive: str | None = None
    spark_log_level: str = "ERROR"
    # which operator runs a two-stream RANGE join (lower): auto (the default choice per join),
    # native (Spark's join wherever it gives the answer), custom (streamjoin's own operator for the
    # joins it runs, also in a bounded run; an EMIT FINAL RANGE join is planned as by auto),
    # batch (streamjoin's batch interval join wherever it runs the query, lower.batch.batch_join)
    join_operator: str = "auto"
    # how the batch interval join finds a micro-batch's pairs (lower.batch.batch_join): auto (keyed on a
    # live run where the keys allow it, else scan), keyed (wherever the keys allow it), scan
    batch_probe: str = "auto"
    # where the keyed probe runs (lower.batch.keyed_probe.in_driver): auto (the driver on a local master,
    # else Spark tasks), driver, tasks
    probe_in: str = "auto"
    operator_groups: int = 32  # hash buckets of the join keys on streamjoin's operator
    operator_columnar: bool = True  # ASOF <= / < joins by column on the operator (off: row by row, to compare)
    home: str | None = None  # the repository root apps live under (STREAMJOIN_HOME)
    storage_retry_s: float = 300.0  # how long an unreachable S3 is retried before the query fails (io.storage.retry)
    crash_at: str | None = None  # STREAMJOIN_CRASH_AT=NAME[:N]: the crash harness's kill point (streamjoin.faults)
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)  # for ${VAR} and AWS_*

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        operator = _choice(env, "STREAMJOIN_JOIN_OPERATOR", JOIN_OPERATORS)
        probe = _choice(env, "STREAMJOIN_BATCH_PROBE", BATCH_PROBES)
        return cls(
            spark_master=env.get("STREAMJOIN_SPARK_MASTER") or None,
            driver_memory=env.get("STREAMJOIN_DRIVER_MEMORY", "2g"),
            driver_java_options=env.get("STREAMJOIN_DRIVER_JAVA_OPTIONS") or None,
            class_archive=env.get("STREAMJOIN_CLASS_ARCHIVE") or None,
            spark_log_level=env.get("STREAMJOIN_SPARK_LOG_LEVEL", "ERROR"),
            join_operator=operator,
            batch_probe=probe,
            probe_in=_choice(env, "STREAMJOIN_KEYED_PROBE_IN", PROBE_PLACES),
            operator_groups=int(env.get("STREAMJOIN_OPERATOR_GROUPS", "32")),
            operator_columnar=env.get("STREAMJOIN_OPERATOR_COLUMNAR", "1").strip().lower() not in ("0", "false", "no", "off"),
            home=env.get("STREAMJOIN_HOME") or None,
            storage_retry_s=float(env.get("STREAMJOIN_STORAGE_RETRY_S", "300")),
            crash_at=env.get("STREAMJOIN_CRASH_AT") or None,
            env=env,
        )


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """The variable's value, one of `choices` (the first when unset or empty)."""
    value = env.get(name, choices[0]).strip().lower() or choices[0]
    if value not in choices:
        raise ValueError(f"{name}={value!r}: use one of {', '.join(choices)}")
    return value
