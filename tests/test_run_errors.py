"""``kapstan run`` refuses to start with one clear line and exit code 2, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from kapstan.local import Sandbox


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kapstan", "run", *args], capture_output=True, text=True, timeout=60
    )


def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.kubeconfig"
    result = _run("--cluster", "default/c", "--workload-kubeconfig", str(missing))
    assert result.returncode == 2
    assert f"--workload-kubeconfig: no kubeconfig at {missing}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_malformed_cluster_flag_is_named(tmp_path: Path) -> None:
    result = _run("--cluster", "just-a-name", "--workload-kubeconfig", str(tmp_path / "x"))
    assert result.returncode == 2
    assert "--cluster must be NAMESPACE/NAME" in result.stderr


@pytest.mark.sandbox
def test_a_missing_cluster_is_named(sandbox: Sandbox) -> None:
    result = _run("--cluster", "nowhere/ghost", "--workload-kubeconfig", str(sandbox.kubeconfig))
    assert result.returncode == 2
    assert "Cluster nowhere/ghost not found in the management cluster" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_api_server_is_waited_for_not_a_crash(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "x",
                        "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True},
                    }
                ],
                "users": [{"name": "x", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
                "current-context": "x",
            }
        )
    )
    argv = [
        sys.executable,
        "-m",
        "kapstan",
        "run",
        "--cluster",
        "a/b",
        "--workload-kubeconfig",
        str(kubeconfig),
    ]
    lines: list[str] = []
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True)
        reader.start()
        # Start-up time is not what is tested (a loaded machine imports slowly): wait for the message.
        deadline = time.monotonic() + 60
        while not any("API server unreachable, retrying" in line for line in lines):
            assert proc.poll() is None, "".join(lines)  # a start-up failure would exit
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)
        time.sleep(2)  # it keeps retrying rather than giving up
        still_running = proc.poll() is None
        proc.terminate()
        proc.wait()
        reader.join()
    stderr = "".join(lines)
    assert still_running, stderr
    assert "Traceback" not in stderr
