"""A Spark standalone cluster on this machine from the virtualenv's Spark: a master and workers,
each `spark-class` in a process group of its own (a test kills the driver, never them)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        import pyspark

        self.root, self.workers, self.cores, self.memory = root, workers, cores, memory
        self.home = Path(pyspark.__file__).parent
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []

    def _env(self) -> dict[str, str]:
        return {**os.environ, "SPARK_HOME": str(self.home), "PYSPARK_PYTHON": sys.executable,
                "SPARK_LOG_DIR": str(self.root / "logs"), "SPARK_WORKER_DIR": str(self.root / "work")}

    def _start(self, name: str, *args: str) -> None:
        log = open(self.root / f"{name}.log", "ab")
        self.processes.append(subprocess.Popen([str(self.home / "bin" / "spark-class"), *args], env=self._env(),
                                               stdout=log, stderr=log, start_new_session=True))

    def start(self) -> StandaloneCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                    "--webui-port", str(free_port()))
        self._wait_for(lambda: self._listening(self.port), "the master to listen")
        for n in range(self.workers):
            self._start(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                        "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(free_port()),
                        "--work-dir", str(self.root / f"work-{n}"))
        self._wait_for(lambda: (self.root / "master.log").read_text().count("Registering worker") >= self.workers,
                       f"{self.workers} workers to register")
        return self

    def workers_alive(self) -> int:
        return sum(p.poll() is None for p in self.processes[1:])

    @staticmethod
    def _listening(port: int) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    def _wait_for(self, ready, what: str, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        while not ready():
            if time.time() > deadline or any(p.poll() is not None for p in self.processes):
                logs = "".join((self.root / f).read_text()[-1500:] for f in os.listdir(self.root) if f.endswith(".log"))
                raise RuntimeError(f"the standalone cluster did not come up (waiting for {what}): {logs}")
            time.sleep(0.3)

    def stop(self) -> None:
        for p in reversed(self.processes):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for p in self.processes:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
