"""The driver JVM's class-data sharing archive (Java's CDS): the ~19,000 classes a streamjoin run
loads from Spark's jars, parsed and verified once and mapped by every later driver instead of
loaded again. Starting a run and its first Spark job took 3-4 s less with it on this machine
(Nexmark q3, a 10 s run: 6.4 s; docs/deployment.md).

`make setup` builds it (`python -m streamjoin.warmup`: the class lists of a few small runs, then
one JVM that writes the archive); a driver uses it when it is there (`java_options`). An archive
that does not match the JVM or the jars (Spark or Java upgraded, a file cut short) is ignored by
the JVM, which then loads the classes as it would without one: slower, never wrong. The JVM's own
warnings go to stderr, never to the rows on stdout.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from streamjoin.settings import Settings

# where the archive sits unless STREAMJOIN_CLASS_ARCHIVE says otherwise: in the Python environment
# that holds pyspark (a virtualenv's own, so a fresh one builds its own)
DEFAULT = Path(sys.prefix) / "share" / "streamjoin" / "spark-classes.jsa"
# every JVM log line of warning level (the default: to stdout) to stderr instead
LOG_TO_STDERR = "-Xlog:disable -Xlog:all=warning:stderr"


def archive_path(settings: Settings) -> Path | None:
    """The archive this process's drivers use: STREAMJOIN_CLASS_ARCHIVE (a path; `off`: none),
    else DEFAULT."""
    value = settings.class_archive
    if value and value.lower() == "off":
        return None
    return Path(value) if value else DEFAULT


def java_options(settings: Settings) -> str:
    """The driver JVM options that map the archive, or "" when there is none to map."""
    path = archive_path(settings)
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {LOG_TO_STDERR}"


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home  # pyspark's own way, as launch_gateway finds it

    return Path(_find_spark_home())


def fingerprint() -> str:
    """What an archive is built for: the Java that runs Spark and Spark's jars (names, sizes, times).
    An archive with another fingerprint is rebuilt (`current`)."""
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if os.environ.get("JAVA_HOME") else None
    java = java or shutil.which("java") or "java"
    digest = hashlib.sha1(os.path.realpath(java).encode())
    jars = spark_home() / "jars"
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return digest.hexdigest()


def current(path: Path) -> bool:
    """Whether the archive at `path` exists and was built for this Java and these jars."""
    key = path.with_suffix(".key")
    return path.is_file() and key.is_file() and key.read_text().strip() == fingerprint()


def merge_class_lists(lists: list[Path], into: Path) -> int:
    """One class list of every class in `lists` (first seen first, comments dropped); its length."""
    seen: dict[str, None] = {}
    for class_list in lists:
        for line in class_list.read_text().splitlines():
            if line and not line.startswith("#"):
                seen.setdefault(line, None)
    into.write_text("\n".join(seen) + "\n")
    return len(seen)


def dump(class_list: Path, path: Path, settings: Settings) -> None:
    """Write the archive of the classes in `class_list` to `path`, through Spark's own launcher so
    that the class path and the module options are exactly a driver's. It appears whole or not at
    all (written beside, then renamed), so a driver never maps a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=path.name + ".", suffix=".partial", dir=path.parent)
    os.close(fd)
    os.unlink(partial)
    home = spark_home()
    noop = Path(partial + ".py")  # never run: the JVM exits once the archive is written (a name per build)
    noop.write_text("")
    options = f"-Xshare:dump -XX:SharedClassListFile={class_list} -XX:SharedArchiveFile={partial} -Xlog:disable -Xlog:all=error:stderr"
    try:
        done = subprocess.run([str(home / "bin" / "spark-submit"), "--driver-java-options", options,
                               "--conf", f"spark.driver.memory={settings.driver_memory}", str(noop)],
                              env={**os.environ, "SPARK_HOME": str(home)}, capture_output=True, text=True)
        if done.returncode != 0 or not Path(partial).is_file():
            raise RuntimeError(f"the JVM did not write the class archive (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        os.replace(partial, path)
        path.with_suffix(".key").write_text(fingerprint() + "\n")
    finally:
        noop.unlink(missing_ok=True)
        Path(partial).unlink(missing_ok=True)
