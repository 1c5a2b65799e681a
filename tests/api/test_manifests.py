"""The loader: multi-document YAML, Lists, directories, unknown kinds, and errors that name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kapstan.api import ManifestError, load_manifests, load_text

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def test_scenario_directory_loads() -> None:
    manifests = load_manifests([SCENARIOS])
    assert len(manifests.node_pools) > 1 and manifests.cluster_classes and manifests.machine_deployments


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
