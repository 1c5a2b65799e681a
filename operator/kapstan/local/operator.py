"""``kapstan run`` as a background process on the sandbox, for the demo and the e2e tests.

It runs as a real process (not a task in the test's event loop) so tests can SIGKILL it mid-launch and
start another, as a crash and a restart would, and so that two replicas compete for the Lease.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kapstan.local import procs


@dataclass
class OperatorProcess:
    directory: Path
    name: str
    cluster: str
    workload_kubeconfig: Path
    management_kubeconfig: Path
    lease: str = "kapstan"
    engine: str | None = None
    extra_args: tuple[str, ...] = ()
    command: tuple[str, ...] = (sys.executable, "-P", "-m", "kapstan")
    """What runs ``kapstan``: this interpreter, or e.g. a container runtime's ``run ... IMAGE`` (tests).
    ``-P``: ``python -m`` would put the current directory first on ``sys.path``, and a ``kapstan/`` or a
    ``click.py`` there (another checkout's ``operator/``, a stray script) would run instead of ours."""
    env: dict[str, str] = field(default_factory=dict)
    """Added to the process's environment (``bench.live`` points PYTHONPATH at another checkout)."""
    pid: int = 0
    metrics_port: int = 0

    def start(self) -> OperatorProcess:
        port = procs.free_port()
        argv = [
            *self.command,
            "run",
            "--cluster",
            self.cluster,
            "--workload-kubeconfig",
            str(self.workload_kubeconfig),
            "--management-kubeconfig",
            str(self.management_kubeconfig),
            "--metrics-address",
            f"127.0.0.1:{port}",
            "--leader-election-id",
            self.lease,
            "--log-level",
            "debug" if os.environ.get("KAPSTAN_DEBUG") else "info",
        ]
        if self.engine:
            argv += ["--engine", self.engine]
        argv += self.extra_args
        self.metrics_port = port
        self.pid = procs.start(self.directory, self.name, argv, self.env)
        return self

    @property
    def running(self) -> bool:
        return self.pid != 0 and procs.alive(self.pid)

    def kill(self) -> None:
        """SIGKILL: no cleanup, no Lease release, as a crashed node would."""
        if self.running:
            os.kill(self.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10.0
            while procs.alive(self.pid) and time.monotonic() < deadline:
                time.sleep(0.05)

    def stop(self) -> None:
        if self.pid:
            procs.stop(self.directory, self.name, self.pid)

    def log(self, lines: int = 40) -> str:
        return procs.log_tail(self.directory, self.name, lines)
