"""The image definition (``image/build.sh``, ``image/requirements.txt``) against what the Deployments expect
of the image and what pyproject.toml asks for. The image itself is built and run by ``make image-test``
(tests/e2e/test_image.py); these checks are cheap enough for every run."""

from __future__ import annotations

import re
import runpy
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from kapstan.install import addon
from kapstan.install.deployment import DEFAULT_IMAGE, NONROOT, deployment

ROOT = Path(__file__).parents[2]
BUILD = (ROOT / "image" / "build.sh").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pins() -> dict[str, tuple[str, str]]:
    """Name -> (version, sha256) of every line of image/requirements.txt."""
    pins = {}
    for line in (ROOT / "image" / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            found = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+) --hash=sha256:([0-9a-f]{64})", line)
            assert found, f"not a pinned, hashed requirement: {line}"
            pins[canonicalize_name(found[1])] = (found[2], found[3])
    return pins


def test_the_lock_pins_every_runtime_dependency_within_what_pyproject_allows() -> None:
    pins = _pins()
    for spec in PYPROJECT["project"]["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in image/requirements.txt: run python image/lock.py"
        assert requirement.specifier.contains(pins[name][0]), f"{name}=={pins[name][0]} breaks {spec}"


def test_the_lock_is_resolved_for_the_images_interpreter() -> None:
    platform_args = runpy.run_path(str(ROOT / "image" / "lock.py"))["PLATFORM_ARGS"]
    assert "--python-version=3.11" in platform_args and "--abi=cp311" in platform_args
    assert "--include=python3.11" in BUILD  # bookworm's interpreter, the one the wheels are chosen for
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"


def test_the_image_provides_what_the_deployments_run() -> None:
    assert PYPROJECT["project"]["scripts"]["kapstan"] == "kapstan.cli:main"
    assert re.search(rf"^NONROOT={NONROOT}$", BUILD, re.MULTILINE)
    assert '--config.user "$NONROOT:$NONROOT"' in BUILD
    assert "--config.entrypoint /usr/local/bin/kapstan " in BUILD
    assert "--config.env PATH=/usr/local/bin:" in BUILD
    (operator,) = [d for d in deployment() if d["kind"] == "Deployment"]
    (addon_deployment,) = [d for d in addon.addon("https://m:6443") if d["kind"] == "Deployment"]
    for manifest in (operator, addon_deployment):
        (container,) = manifest["spec"]["template"]["spec"]["containers"]
        assert container["command"] == ["kapstan"]  # the console script on the image's PATH
        assert container["image"] == DEFAULT_IMAGE
        assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_default_image_reference_is_the_one_make_image_names() -> None:
    repository = re.search(r"^REPOSITORY=\$\{IMAGE_REPOSITORY:-(\S+)\}$", BUILD, re.MULTILINE)
    assert repository, "image/build.sh names no default repository"
    assert f"{repository[1]}:{PYPROJECT['project']['version']}" == DEFAULT_IMAGE
