"""The generated CRDs: what `kapstan render crds` prints, and schema facts that need no API server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from click.testing import CliRunner

from kapstan.cli_render import render_group
from kapstan.install.crds import OPERATORS, crds
from kapstan.scheduling.model import NODE_OPERATORS


def test_render_prints_the_three_crds_as_multi_document_yaml() -> None:
    result = CliRunner().invoke(render_group, ["crds"])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert [d["metadata"]["name"] for d in docs] == [
        "nodepools.karpenter.sh",
        "nodeclaims.karpenter.sh",
        "clusterapinodeclasses.karpenter.cluster.x-k8s.io",
    ]
    assert docs == crds()


def test_requirement_operators_are_the_ones_the_solver_knows() -> None:
    assert set(OPERATORS) == NODE_OPERATORS


def test_printer_columns_match_karpenter() -> None:
    default_columns = {
        c["metadata"]["name"]: [col["name"] for col in c["spec"]["versions"][0]["additionalPrinterColumns"]]
        for c in crds()
    }
    assert default_columns == {
        "nodepools.karpenter.sh": ["NodeClass", "Nodes", "Ready", "Age", "Weight", "CPU", "Memory"],
        "nodeclaims.karpenter.sh": [
            "Type",
            "Capacity",
            "Zone",
            "Node",
            "Ready",
            "Age",
            "ID",
            "NodePool",
            "NodeClass",
        ],
        "clusterapinodeclasses.karpenter.cluster.x-k8s.io": ["Ready", "Age"],
    }


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


def test_schemas_are_structural() -> None:
    """Every node has a type, unless it is int-or-string or deliberately open (the server checks too)."""
    for crd in crds():
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in _nodes(schema):
            open_ended = node.get("x-kubernetes-int-or-string") or node.get(
                "x-kubernetes-preserve-unknown-fields"
            )
            assert "type" in node or open_ended, f"{crd['metadata']['name']} {path} has no type"
