"""``pip install <wheel>`` carries what the sandbox needs: a fresh virtualenv with kapstan installed from the
wheel maturin builds (not the editable checkout), run from a directory outside the repo, builds (a cache
hit: the wheel's Go sources give the checkout's cache key), starts and stops the sandbox."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kapstan.capi.contract import MACHINEDEPLOYMENTS
from kapstan.kube.client import Client
from kapstan.kube.errors import ApiError
from kapstan.local.build import artifacts

REPO = Path(__file__).resolve().parents[2]
SHIPPED = "kapstan/local/sandbox-go/"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    cwd: Path

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        # The checkout's environment minus anything that would point the installed copy back at it.
        env = {k: v for k, v in os.environ.items() if k not in ("KAPSTAN_SANDBOX_SRC", "PYTHONPATH")}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return subprocess.run(
            list(args), cwd=self.cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    scratch = tmp_path_factory.mktemp("wheel")
    # The Rust core was built by `make setup` with the same profile, so this mostly zips files.
    maturin = [sys.executable, "-m", "maturin", "build", "--release", "--locked", "--compatibility", "off"]
    subprocess.run(
        [*maturin, "--interpreter", sys.executable, "--out", str(scratch / "dist")],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    (wheel,) = (scratch / "dist").glob("kapstan-*.whl")
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
    )
    cwd = scratch / "elsewhere"
    cwd.mkdir()
    yield Installed(wheel, venv, cwd)


def test_the_installed_wheel_has_every_sandbox_source_and_the_checkouts_cache_key(
    installed: Installed,
) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    tracked = subprocess.run(
        ["git", "ls-files", "sandbox"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {SHIPPED + path.removeprefix("sandbox/") for path in tracked} <= names
    probe = installed.run(
        "python",
        "-c",
        "from kapstan.local import sources; print(sources.sandbox_sources()); print(sources.artifacts().root)",
    )
    assert probe.returncode == 0, probe.stderr
    source, root = probe.stdout.split()
    assert Path(source).is_relative_to(installed.venv), "the installed copy must use its own sources"
    assert root == str(artifacts().root)


def test_local_build_up_down_from_the_wheel(installed: Installed) -> None:
    # Only a cache hit is wanted here: a different key would start a cold 14-minute build and prune the
    # checkout's binaries, so the key is compared before `local build` runs.
    expected = artifacts()
    probe = installed.run(
        "python", "-c", "from kapstan.local.sources import artifacts; print(artifacts().root)"
    )
    assert probe.stdout.strip() == str(expected.root), probe.stderr
    if not expected.complete:
        pytest.skip(f"the sandbox binaries are not built yet ({expected.root}); `make sandbox` builds them")

    built = installed.run("kapstan", "local", "build")
    assert built.returncode == 0, built.stderr
    assert built.stdout.strip() == str(expected.root)
    assert "cached:" in built.stderr

    directory = installed.cwd / "sandbox"
    up = installed.run("kapstan", "local", "up", "--dir", str(directory))
    try:
        assert up.returncode == 0, up.stderr
        kubeconfig = directory / "kubeconfig"
        assert f"export KUBECONFIG={kubeconfig}" in up.stdout
        assert _cluster_api_served(kubeconfig)
    finally:
        down = installed.run("kapstan", "local", "down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
    assert not directory.exists()


def _cluster_api_served(kubeconfig: Path, timeout: float = 60.0) -> bool:
    """The API server answers and serves Cluster API's MachineDeployments (the CRDs `up` installs); just
    after `up` the server may still answer 429 "storage is (re)initializing" for a new CRD."""

    async def check() -> bool:
        client = await Client.connect(str(kubeconfig))
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = await client.request("GET", MACHINEDEPLOYMENTS)
            except ApiError as error:
                if error.status != 429 or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(1)
                continue
            return found.get("kind") == "MachineDeploymentList"

    return asyncio.run(check())
