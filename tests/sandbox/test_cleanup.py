"""``kapstan local down`` and the pytest fixture leave no process, port or directory behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kapstan.cli_local import local_group
from kapstan.local import procs
from kapstan.local.procs import alive

HERE = Path(__file__).parent


def _listening_ports(pids: list[int]) -> set[int]:
    """TCP ports in LISTEN state owned by ``pids`` (socket inodes from /proc/PID/fd matched in /proc/net/tcp)."""
    inodes: set[str] = set()
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir() if fd_dir.exists() else []:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _refused(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) != 0


def _assert_gone(pids: list[int], ports: set[int], directory: Path) -> None:
    assert not [p for p in pids if alive(p)], "processes left running"
    assert all(_refused(p) for p in ports), "ports still accepting connections"
    assert not directory.exists(), f"{directory} left behind"


def test_cli_up_then_down_leaves_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "cli"
    runner = CliRunner()
    up = runner.invoke(local_group, ["up", "--dir", str(directory), "--two-clusters"], catch_exceptions=False)
    assert up.exit_code == 0, up.output
    for name in ("kubeconfig", "management.kubeconfig", "workload.kubeconfig"):
        assert (directory / name).exists()
    pids = list(procs.recorded(directory).values())
    assert len(pids) >= 8
    ports = _listening_ports(pids)
    assert ports and all(not _refused(p) for p in ports)

    down = runner.invoke(local_group, ["down", "--dir", str(directory)], catch_exceptions=False)
    assert down.exit_code == 0, down.output
    _assert_gone(pids, ports, directory)


INNER = """
import json, os, signal
from pathlib import Path
from kapstan.local import procs

def test_inner(sandbox):
    pids = list(procs.recorded(sandbox.directory).values())
    Path(os.environ["KAPSTAN_INNER_OUT"]).write_text(json.dumps(
        {"pids": pids, "ports": sorted(PORTS(pids)), "dir": str(sandbox.directory)}))
    if os.environ["KAPSTAN_INNER_MODE"] == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
    assert False, "fail on purpose: the fixture must still clean up"
"""


def _run_inner(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    inner = tmp_path / f"inner_{mode}.py"
    inner.write_text(
        "from test_cleanup import _listening_ports as PORTS\nfrom sandbox_fixture import sandbox\n" + INNER
    )
    out = tmp_path / "out.json"
    env = {**os.environ, "KAPSTAN_INNER_OUT": str(out), "KAPSTAN_INNER_MODE": mode}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")])
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(inner),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    return res, json.loads(out.read_text())


def test_fixture_cleans_up_after_a_failing_test(tmp_path: Path) -> None:
    res, seen = _run_inner(tmp_path, "fail")
    assert res.returncode == 1, res.stdout + res.stderr
    _assert_gone(list(seen["pids"]), set(seen["ports"]), Path(str(seen["dir"])))  # type: ignore[call-overload]


def test_fixture_cleans_up_after_ctrl_c(tmp_path: Path) -> None:
    res, seen = _run_inner(tmp_path, "interrupt")
    assert res.returncode == 2, res.stdout + res.stderr  # pytest's exit code for an interrupted run
    _assert_gone(list(seen["pids"]), set(seen["ports"]), Path(str(seen["dir"])))  # type: ignore[call-overload]
