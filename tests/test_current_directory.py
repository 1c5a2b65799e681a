"""kapstan does not import from the directory it is started in: ``python -m`` puts it first on ``sys.path``,
so ``make demo`` run from a directory holding a ``click.py`` (any module named like one kapstan imports)
failed in its operator process with that module's error, and one holding another checkout's ``kapstan/``
ran that checkout's operator."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kapstan.local import procs
from kapstan.local.operator import OperatorProcess

STRAY = 'raise SystemExit("a stray {} of the current directory was imported")\n'


@pytest.fixture
def stray_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory, holding a stray ``click.py`` and a stray ``kapstan`` package."""
    (tmp_path / "click.py").write_text(STRAY.format("click.py"))
    (tmp_path / "kapstan").mkdir()
    (tmp_path / "kapstan" / "__init__.py").write_text(STRAY.format("kapstan/"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_demos_operator_process_runs_this_kapstan_whatever_the_current_directory(
    stray_directory: Path,
) -> None:
    missing = stray_directory / "nope.kubeconfig"
    operator = OperatorProcess(
        directory=stray_directory / "run",
        name="kapstan",
        cluster="default/c",
        workload_kubeconfig=missing,
        management_kubeconfig=missing,
    ).start()
    deadline = time.monotonic() + 120.0  # a hang guard only: the process exits once it has read its flags
    while procs.alive(operator.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not operator.running, "kapstan run should have refused the missing kubeconfig and exited"
    log = operator.log()
    assert "stray" not in log
    assert f"--workload-kubeconfig: no kubeconfig at {missing}" in log


def test_python_m_kapstan_does_not_import_a_stray_module_of_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "click.py").write_text(STRAY.format("click.py"))
    missing = tmp_path / "nope.kubeconfig"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kapstan",
            "run",
            "--cluster",
            "default/c",
            "--workload-kubeconfig",
            str(missing),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "stray" not in result.stderr
    assert result.returncode == 2
    assert f"--workload-kubeconfig: no kubeconfig at {missing}" in result.stderr
