"""The benchmark's memory figure (bench/steady.py `spawning`, used by bench/run.py): a JVM's child
caught between its clone and its exec shares the JVM's memory and is not counted again; every other
process of the tree is."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import steady

JAVA = ["/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "-cp", "jars/*", "org.apache.spark.deploy.SparkSubmit"]


class Proc:
    def __init__(self, name: str, cmdline: list[str], parent: Proc | None = None):
        self._name, self._cmdline, self._parent = name, cmdline, parent

    def name(self) -> str:
        return self._name

    def cmdline(self) -> list[str]:
        return self._cmdline

    def parent(self) -> Proc | None:
        return self._parent


def test_only_a_jvms_child_that_has_not_exec_d_yet_is_left_out_of_the_memory_sum():
    shell = Proc("bash", ["bash", "spark-class"])
    jvm = Proc("java", JAVA, shell)
    assert steady.spawning(Proc("Executor task l", JAVA, jvm))  # named after the thread that spawns it
    assert steady.spawning(Proc("java", JAVA, jvm))
    assert not steady.spawning(jvm)
    daemon = Proc("python", ["python", "-m", "pyspark.daemon"], jvm)
    assert not steady.spawning(daemon)
    assert not steady.spawning(Proc("python", ["python", "-m", "pyspark.daemon"], daemon))  # a fork of the daemon counts
    assert not steady.spawning(Proc("java", JAVA, None))
