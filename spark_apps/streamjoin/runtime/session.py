"""Spark set-up in one place: local master sized for the machine, RocksDB state store,
UTC session time, the workers' Python, quiet logs."""

from __future__ import annotations

import os
import sys

from streamjoin.io.storage.memory import lean_heap, lean_pool
from streamjoin.runtime import class_archive
from streamjoin.settings import Settings

# the driver JVM's garbage collector for a bounded run (`--until-idle`) unless
# STREAMJOIN_DRIVER_JAVA_OPTIONS says otherwise: the parallel collector held less peak memory than
# G1 on `make bench`'s bounded runs in about the same time (docs/deployment.md); a live run keeps
# G1, whose pauses are short. The heap starts at 64 MB, not the JVM's 1/64 of the machine's memory
# (384 MB here): a small run's JVM touched 100-200 MB less (Nexmark q8), a large one grows it as
# before. No Min/MaxHeapFreeRatio (5/20 until 2026-12-04): they capped the old generation at 1.25x
# what it held, and three-inner at 16x, whose young generation held ~400 MB it could not promote,
# spent 450 s of 8 minutes in 5,400 full collections; with the JVM's own ratios it ran in 198 s
BOUNDED_JAVA_OPTIONS = "-XX:+UseParallelGC -XX:GCTimeRatio=4 -Xms64m"
# and for a bounded run over little input (SMALL_INPUT_BYTES, Pipeline.input_bytes), the JIT's
# quick tier only: such a run ends before C2's code pays for its compilations and for the
# profiling tiers that feed it (Nexmark q3 15.2-16.1 s -> 11.3-11.5 s, q8 22.6-23.7 -> 17.8-18.3 on
# 18 MB of JSON, 2026-11-30); a run joining 2M rows into 9.75M stays on C2 (37 s against 61 s)
SMALL_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
SMALL_INPUT_BYTES = 32 << 20
# a bounded run's shuffles (the batch join's, chiefly) make this many partitions per core: its
# output is collected partition by partition, and the driver JVM holds a partition's rows whole
# while it waits to pass them on in order. Two partitions of inner-dense's 9.75M joined rows held
# the JVM at 1.8-2.1 GB, eight at 0.8-0.95 GB (peak 2.4-2.5 GB -> 1.6-1.8 GB, 2026-11-30); its time
# 41-45 s -> 51-52 s, inner-sparse and Nexmark q20 the same either way. A live run keeps one per
# core: each is a state store task in every micro-batch.
BOUNDED_SHUFFLE_FACTOR = 4


def spark_session(app_name: str = "streamjoin", master: str | None = None, settings: Settings | None = None,
                  bounded: bool = False, small: bool = False):
    """The (one) SparkSession of this process, created on first use; `bounded`: for a run that
    ends when its input does (BOUNDED_JAVA_OPTIONS); `small`: over little input (SMALL_JAVA_OPTIONS).

    >>> spark = spark_session()  # doctest: +SKIP
    """
    settings = settings or Settings.from_env()
    # Spark's Python workers run `python3` from PATH unless told otherwise.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    lean_pool()  # Arrow's memory pool: jemalloc, which gives freed pages back (io.storage.memory)
    lean_heap()  # and glibc's large blocks mapped on their own, so they go back when freed
    cores = os.cpu_count() or 2
    builder = SparkSession.builder.appName(app_name)
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:  # under spark-submit, its --master stands
        builder = builder.master(master or settings.spark_master or f"local[{cores}]")
    builder = (
        builder
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions(cores, bounded)))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "true")
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.sql.adaptive.enabled", "false")
        # the batch interval join reads every retained step file each micro-batch (60 files per
        # input with a 1-minute window): above 32 paths Spark lists them with a Spark job, 0.5-1 s
        # of each micro-batch here against a few ms on the driver
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1024")
        # IS NOT NULL filters inferred from join keys would be pushed below the watermark and
        # drop the rowtime-bound rows (all NULL but their rowtime) that move it.
        .config("spark.sql.optimizer.excludedRules",
                "org.apache.spark.sql.catalyst.optimizer.InferFiltersFromConstraints")
    )
    java_options = driver_java_options(settings, bounded, small)
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", java_options)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.spark_log_level)
    return spark


def shuffle_partitions(cores: int, bounded: bool) -> int:
    """Spark's shuffle partitions: one per core (at least two), a live query's state stores
    too; a bounded run four times as many (BOUNDED_SHUFFLE_FACTOR)."""
    return max(2, cores) * (BOUNDED_SHUFFLE_FACTOR if bounded else 1)


def driver_java_options(settings: Settings, bounded: bool, small: bool = False) -> str | None:
    """The extra JVM options of a driver this process starts: STREAMJOIN_DRIVER_JAVA_OPTIONS, else
    for a bounded run BOUNDED_JAVA_OPTIONS (and SMALL_JAVA_OPTIONS over little input), else none
    (the JVM's defaults); and with either, the class archive's when there is one
    (class_archive.java_options)."""
    bounded_options = f"{BOUNDED_JAVA_OPTIONS} {SMALL_JAVA_OPTIONS}" if small else BOUNDED_JAVA_OPTIONS
    chosen = settings.driver_java_options or (bounded_options if bounded else None)
    return " ".join(filter(None, [chosen, class_archive.java_options(settings)])) or None
