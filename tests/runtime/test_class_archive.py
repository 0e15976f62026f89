"""The driver JVM's class archive (runtime.class_archive, built by `python -m streamjoin.warmup`):
a driver maps it when it is there, the archive a dump writes is one Spark's launcher maps, and an
archive that cannot be mapped only slows a run: its rows on stdout stay the same and alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from streamjoin import warmup
from streamjoin.runtime import class_archive
from streamjoin.runtime.session import BOUNDED_JAVA_OPTIONS, driver_java_options
from streamjoin.settings import Settings


def test_a_driver_maps_the_archive_only_when_there_is_one(tmp_path):
    archive = tmp_path / "classes.jsa"
    settings = Settings.from_env({"STREAMJOIN_CLASS_ARCHIVE": str(archive)})
    assert class_archive.java_options(settings) == ""
    assert driver_java_options(settings, bounded=True) == BOUNDED_JAVA_OPTIONS
    archive.write_bytes(b"archive")
    assert class_archive.java_options(settings) == f"-XX:SharedArchiveFile={archive} {class_archive.LOG_TO_STDERR}"
    assert driver_java_options(settings, bounded=False) == class_archive.java_options(settings)
    both = driver_java_options(settings, bounded=True)
    assert both.startswith(BOUNDED_JAVA_OPTIONS) and both.endswith("-Xlog:all=warning:stderr")
    assert class_archive.archive_path(Settings.from_env({"STREAMJOIN_CLASS_ARCHIVE": "off"})) is None
    assert class_archive.archive_path(Settings.from_env({})) == class_archive.DEFAULT


def test_class_lists_merge_into_one_list_of_every_class_once(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("# NOTE: generated\njava/lang/Object\norg/apache/spark/SparkContext\n")
    second.write_text("#\njava/lang/Object\n@lambda-proxy java/lang/Runnable run\n\n")
    merged = tmp_path / "all"
    assert class_archive.merge_class_lists([first, second], merged) == 3
    assert merged.read_text().splitlines() == ["java/lang/Object", "org/apache/spark/SparkContext",
                                               "@lambda-proxy java/lang/Runnable run"]


def test_an_archive_is_current_only_for_the_java_and_jars_it_was_built_for(tmp_path):
    archive = tmp_path / "classes.jsa"
    archive.write_bytes(b"archive")
    assert not class_archive.current(archive)  # no key
    archive.with_suffix(".key").write_text("another java\n")
    assert not class_archive.current(archive)
    archive.with_suffix(".key").write_text(class_archive.fingerprint() + "\n")
    assert class_archive.current(archive)


def run(program: Path, checkpoint: Path, archive: Path, java_options: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "STREAMJOIN_CLASS_ARCHIVE": str(archive), "STREAMJOIN_DRIVER_JAVA_OPTIONS": java_options}
    return subprocess.run([sys.executable, "-m", "streamjoin.cli", "run", str(program), "--until-idle",
                           "--checkpoint", str(checkpoint)], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.spark
def test_a_dumped_archive_is_mapped_by_a_driver_and_a_cut_short_one_changes_no_row(tmp_path):
    classes = tmp_path / "classes"
    classes.write_text("java/lang/Object\njava/util/HashMap\norg/apache/spark/SparkConf\norg/apache/spark/SparkContext\n"
                       "org/apache/spark/sql/SparkSession\norg/apache/spark/deploy/SparkSubmit\n")
    archive = tmp_path / "archive" / "classes.jsa"
    class_archive.dump(classes, archive, Settings.from_env({}))
    assert class_archive.current(archive) and sorted(p.name for p in archive.parent.iterdir()) == ["classes.jsa", "classes.key"]
    name, _, text = warmup.PROGRAMS[0]
    program = tmp_path / f"{name}.sql"
    program.write_text(text.format(**warmup.write_inputs(tmp_path / "inputs", rows=200, keys=10)))

    # -Xshare:on: a JVM that cannot map the archive refuses to start, so this run used it
    mapped = run(program, tmp_path / "ck-mapped", archive, "-Xshare:on")
    assert mapped.returncode == 0, mapped.stderr[-2000:]
    rows = mapped.stdout.splitlines()
    assert rows and all(json.loads(row) for row in rows)

    cut = tmp_path / "cut.jsa"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 3])
    unmapped = run(program, tmp_path / "ck-cut", cut, "-XX:+UseSerialGC")
    assert unmapped.returncode == 0, unmapped.stderr[-2000:]
    assert sorted(unmapped.stdout.splitlines()) == sorted(rows)  # and nothing else on stdout
