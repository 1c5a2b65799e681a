"""The committed install manifests are exactly what the generator produces
(docs/architecture.md#generated-files-are-checked)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kapstan.cli import main

COMMITTED = Path(__file__).parents[2] / "install" / "crds.yaml"


def test_committed_crds_match_the_generator() -> None:
    result = CliRunner().invoke(main, ["render", "crds"])
    assert result.exit_code == 0, result.output
    assert result.output == COMMITTED.read_text(), (
        f"{COMMITTED} is stale: regenerate it with `kapstan render crds > install/crds.yaml`"
    )
