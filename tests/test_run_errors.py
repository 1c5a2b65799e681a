"""``kapstan run`` refuses to start with one clear line and exit code 2, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
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
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True) as proc:
        try:
            _, stderr = proc.communicate(timeout=6)
        except subprocess.TimeoutExpired:
            proc.terminate()
            _, stderr = proc.communicate()
    assert proc.returncode != 2, stderr  # still retrying when stopped, not a start-up failure
    assert "API server unreachable, retrying" in stderr
