"""The driver JVM's options (runtime.session.driver_java_options): a bounded run (`--until-idle`)
gets the parallel collector that returns freed heap (less peak memory, issue 42), a live run the
JVM's own, and STREAMJOIN_DRIVER_JAVA_OPTIONS wins over both; the class archive's options come
with any of them (tests/runtime/test_class_archive.py), here turned off."""

from __future__ import annotations

from streamjoin.runtime.session import BOUNDED_JAVA_OPTIONS, driver_java_options
from streamjoin.settings import Settings


def test_a_bounded_run_gets_the_parallel_collector_and_a_live_run_the_jvms_own():
    settings = Settings.from_env({"STREAMJOIN_CLASS_ARCHIVE": "off"})
    assert "-XX:+UseParallelGC" in driver_java_options(settings, bounded=True) == BOUNDED_JAVA_OPTIONS
    assert driver_java_options(settings, bounded=False) is None


def test_the_operators_java_options_win_over_the_bounded_runs():
    settings = Settings.from_env({"STREAMJOIN_DRIVER_JAVA_OPTIONS": "-XX:+UseG1GC", "STREAMJOIN_CLASS_ARCHIVE": "off"})
    assert driver_java_options(settings, bounded=True) == driver_java_options(settings, bounded=False) == "-XX:+UseG1GC"
