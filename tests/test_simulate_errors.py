"""Bad input through `kapstan simulate`: one clear line naming the object and field, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kapstan.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
CATALOG = (SCENARIOS / "article-catalog-mds.yaml").read_text()
WORKLOAD = (SCENARIOS / "inflate-8x1cpu.yaml").read_text()


def run(tmp_path: Path, text: str) -> tuple[int, str]:
    manifest = tmp_path / "input.yaml"
    manifest.write_text(text)
    result = CliRunner().invoke(main, ["simulate", "-f", str(manifest), "--engine", "python"])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (
            (
                CATALOG.replace(
                    'capacity.cluster-autoscaler.kubernetes.io/cpu: "2"',
                    'capacity.cluster-autoscaler.kubernetes.io/cpu: "2x"',
                    1,
                ),
                "",
            ),
            ["MachineDeployment", "capacity.cluster-autoscaler.kubernetes.io/cpu", "2x"],
        ),
        (
            (CATALOG.replace("operator: In", "operator: Equalz", 1), ""),
            ["NodePool", "operator", "Equalz"],
        ),
        (
            (CATALOG.replace("name: default\nspec: {}", "name: renamed\nspec: {}", 1), ""),
            ["NodePool default", "nodeClassRef", "default"],
        ),
        (
            (
                CATALOG.replace(
                    'capacity.cluster-autoscaler.kubernetes.io/cpu: "2"', "example.com/unrelated: x", 1
                ),
                "",
            ),
            ["MachineDeployment", "capacity.cluster-autoscaler.kubernetes.io/cpu"],
        ),
    ],
    ids=["malformed-quantity", "unknown-operator", "missing-nodeclass", "no-capacity-source"],
)
def test_bad_input_is_one_clear_error(tmp_path: Path, broken: tuple[str, str], expected: list[str]) -> None:
    code, output = run(tmp_path, broken[0] + "\n---\n" + WORKLOAD)
    assert code == 2, output
    assert output.startswith("error: ")
    for fragment in expected:
        assert fragment in output


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    code, output = run(tmp_path, "kind: Pod\nmetadata: [unclosed\n")
    assert code == 2 and "input.yaml" in output
