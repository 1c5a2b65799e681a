"""The loader: multi-document YAML, Lists, directories, unknown kinds, and errors that name the file."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kapstan.api import ManifestError, load_manifests, load_text
from kapstan.api.errors import MAX_PART, escape, shown

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def test_scenario_directory_loads() -> None:
    """Each scenario file loads on its own; the directory reads every file, and as its files are separate
    scenarios that reuse names (Deployment inflate in two shapes), it is refused naming the conflict."""
    loaded = [load_manifests([path]) for path in sorted(SCENARIOS.glob("*.yaml"))]
    assert sum(len(m.node_pools) for m in loaded) > 1
    assert any(m.cluster_classes for m in loaded) and any(m.machine_deployments for m in loaded)
    with pytest.raises(
        ManifestError, match="Deployment default/inflate: listed twice with different contents"
    ):
        load_manifests([SCENARIOS])


def test_empty_documents_lists_and_unknown_kinds() -> None:
    manifests = load_text("""
---
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Namespace, metadata: {name: team-a, labels: {team: a}}}
  - {apiVersion: v1, kind: Service, metadata: {name: ignored}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: ignored}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: prices, namespace: kapstan}
data: {c3-4: "0.05"}
""")
    assert [ns.name for ns in manifests.namespaces] == ["team-a"]
    assert manifests.config_maps[("kapstan", "prices")].data == {"c3-4": "0.05"}


def test_document_without_kind() -> None:
    with pytest.raises(ManifestError, match=r"document has no apiVersion or kind \(in f.yaml, document 2\)"):
        load_text(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nmetadata: {name: b}\n", "f.yaml"
        )


def test_document_that_is_not_an_object() -> None:
    with pytest.raises(
        ManifestError, match=r"expected a Kubernetes object, got list \(in f.yaml, document 1\)"
    ):
        load_text("- a\n- b\n", "f.yaml")


def test_malformed_yaml_names_file_and_document() -> None:
    with pytest.raises(ManifestError, match=r"^f.yaml: document 2: invalid YAML"):
        load_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: [unclosed\n", "f.yaml")


def test_unsupported_version() -> None:
    with pytest.raises(
        ManifestError, match=r"NodePool default: apiVersion: unsupported version karpenter.sh/v1beta1"
    ):
        load_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: default}\nspec: {}\n")


def test_missing_required_field() -> None:
    with pytest.raises(
        ManifestError, match=r"MachineDeployment capi/md: spec.template.spec.infrastructureRef: required"
    ):
        load_text("""
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: md, namespace: capi}
spec: {clusterName: c, template: {spec: {}}}
""")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"missing.yaml: cannot read"):
        load_manifests([tmp_path / "missing.yaml"])


BOMB = (
    "[&b0 [l, l, l, l, l, l, l, l, l], "
    + ", ".join(f"&b{i} [{', '.join([f'*b{i - 1}'] * 9)}]" for i in range(1, 9))
    + "]"
)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"apiVersion: v1\nkind: Pod\nbomb: {BOMB}\n", "more than 100000 nodes once aliases are expanded"),
        ("apiVersion: v1\nkind: Pod\nloop: &a [*a]\n", "alias *a refers to a node that contains it"),
        ("apiVersion: v1\nkind: Pod\nmetadata: " + "[" * 100 + "]" * 100, "nesting deeper than 64 levels"),
        ("apiVersion: v1\nkind: Pod\nmetadata: " + "[" * 1100 + "]" * 1100, "nesting"),
        ("a: &d " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*d" + "]" * 30, "once aliases are expanded"),
        ("apiVersion: v1\nkind: Pod\nn: " + "9" * 5000, "an integer of 5000 characters"),
        ("kind: Pod\nmetadata: [unclosed\n", "(while parsing a flow sequence) at line 3, column 1"),
    ],
    ids=["alias-bomb", "recursive-alias", "deep", "1100-deep", "deep-through-alias", "long-integer", "caret"],
)
def test_hostile_yaml_is_one_line_naming_the_source(text: str, problem: str) -> None:
    started = time.monotonic()
    with pytest.raises(ManifestError) as caught:
        load_text(text, "hostile.yaml")
    assert time.monotonic() - started < 2
    message = str(caught.value)
    assert message.startswith("hostile.yaml: document 1: invalid YAML: ") and "\n" not in message
    assert problem in message


def test_ordinary_anchors_still_load() -> None:
    manifests = load_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: &l {app: x}}\nspec:\n  containers: []\n"
        "  nodeSelector: *l\n"
    )
    assert manifests.workloads[0].spec.node_selector == {"app": "x"}


def test_error_text_from_a_manifest_is_escaped_and_cut() -> None:
    assert escape("a\x1b[31m\nb\u2028") == "a\\x1b[31m\\nb\\u2028"
    assert len(escape("x" * 10_000)) == MAX_PART + 3
    assert shown([[1] * 10] * 10) == "a list" and shown(10**5000).startswith(
        "an integer of about 5000 digits"
    )
    assert shown("y" * 1000).endswith("...") and len(shown("y" * 1000)) < 100
