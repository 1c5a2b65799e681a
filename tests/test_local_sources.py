"""The sandbox's Go sources are looked up when a build asks, not at import: importing ``kapstan.local``
leaves the environment alone (a subprocess the tests or the demo start inherits nothing from it), and a
build names the package's sources to ``build.py`` for its own length only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kapstan.local import sources
from kapstan.local.build import Artifacts, BuildError, artifacts

REPO = Path(__file__).resolve().parents[1]


def test_importing_the_sandbox_package_sets_no_environment_variable() -> None:
    env = {k: v for k, v in os.environ.items() if k != sources.SOURCES_ENV}
    probe = "import os, kapstan.local, kapstan.cli; print(os.environ.get('KAPSTAN_SANDBOX_SRC'))"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "None"


def test_a_checkout_builds_its_own_sandbox_folder_unless_the_variable_names_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(sources.SOURCES_ENV, raising=False)
    assert sources.sandbox_sources() == REPO / "sandbox"
    assert sources.artifacts() == artifacts(REPO / "sandbox")
    monkeypatch.setenv(sources.SOURCES_ENV, str(tmp_path))
    assert sources.sandbox_sources() == tmp_path


def test_a_build_names_the_sources_for_its_length_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sources.SOURCES_ENV, raising=False)
    seen: list[str | None] = []

    def fake_build(force: bool = False) -> Artifacts:
        seen.append(os.environ.get(sources.SOURCES_ENV))
        raise BuildError("no Go here")

    monkeypatch.setattr(sources, "build_cached", fake_build)
    with pytest.raises(BuildError):
        sources.build()
    assert seen == [str(REPO / "sandbox")]
    assert sources.SOURCES_ENV not in os.environ
