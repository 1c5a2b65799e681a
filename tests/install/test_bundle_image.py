"""The image definition (``Dockerfile``) against the repository: no image can be built on these machines
(no container engine), so at least every input it copies exists and is tracked, and what the Deployments
expect of the image (the ``kapstan`` command, the non-root user) is what it provides."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

from kapstan.install import addon
from kapstan.install.deployment import NONROOT, deployment

ROOT = Path(__file__).parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _instructions(name: str) -> list[str]:
    """The arguments of every ``name`` instruction, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.startswith(f"{name} ")]


def test_every_file_the_image_copies_from_the_repository_exists_and_is_tracked() -> None:
    sources = [
        src for args in _instructions("COPY") if not args.startswith("--from=") for src in args.split()[:-1]
    ]
    assert sources == ["Cargo.toml", "Cargo.lock", "pyproject.toml", "rust", "operator"]
    tracked = subprocess.run(
        ["git", "ls-files", *sources], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for source in sources:
        assert (ROOT / source).exists(), source
        assert any(path == source or path.startswith(f"{source}/") for path in tracked), (
            f"{source} not in git"
        )


def test_the_build_uses_the_locked_crates_and_the_maturin_pyproject_allows() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (requirement,) = pyproject["build-system"]["requires"]
    assert requirement == "maturin>=1.7,<2"
    (pinned,) = re.findall(r'"maturin==(\d+)\.(\d+)\.(\d+)"', DOCKERFILE)
    assert (1, 7) <= (int(pinned[0]), int(pinned[1])) < (2, 0)
    assert "--locked" in DOCKERFILE
    assert pyproject["project"]["requires-python"] == ">=3.11"
    assert "ARG PYTHON_VERSION=3.11" in DOCKERFILE


def test_the_image_provides_what_the_deployments_run() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["kapstan"] == "kapstan.cli:main"
    assert _instructions("USER") == [f"{NONROOT}:{NONROOT}"]
    assert _instructions("ENTRYPOINT") == ['["kapstan"]']
    (operator,) = [d for d in deployment() if d["kind"] == "Deployment"]
    (addon_deployment,) = [d for d in addon.addon("https://m:6443") if d["kind"] == "Deployment"]
    for manifest in (operator, addon_deployment):
        (container,) = manifest["spec"]["template"]["spec"]["containers"]
        assert container["command"] == ["kapstan"]
