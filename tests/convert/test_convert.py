"""``kapstan convert``: v1alpha5 Provisioners to v1 NodePools and ClusterAPINodeClasses that kapstan plans
with, a comment for each field that changes shape or has no v1 equivalent; ``simulate`` names a v1alpha5
object it leaves out instead of planning nothing in silence."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from kapstan import scheduling
from kapstan.api.manifests import load_text
from kapstan.cli import main
from kapstan.snapshot import build_snapshot

SCENARIOS = Path(__file__).parents[1] / "scenarios"
INTRO = SCENARIOS / "intro-provisioner.yaml"
CATALOG = SCENARIOS / "m5-catalog-mds.yaml"
INFLATE = SCENARIOS / "inflate-8x1cpu.yaml"

FULL = """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: batch
  uid: 1234
spec:
  labels: {team: batch}
  annotations: {owner: data}
  taints: [{key: batch, effect: NoSchedule}]
  startupTaints: [{key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}]
  requirements:
    - {key: karpenter.sh/provisioner-name, operator: In, values: [batch]}
    - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
  limits: {resources: {cpu: "100", memory: 400Gi}}
  weight: 20
  consolidation: {enabled: true}
  ttlSecondsUntilExpired: 2592000
  kubeletConfiguration:
    maxPods: 58
    systemReserved: {cpu: 100m, memory: 100Mi}
    clusterDNS: [10.0.1.100]
  providerRef: {name: al2}
status:
  resources: {cpu: "4"}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: al2
spec:
  amiFamily: AL2
  subnetSelector: {karpenter.sh/discovery: my-cluster}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: web
spec:
  ttlSecondsAfterEmpty: 30
  providerRef: {name: al2}
  kubeletConfiguration:
    systemReserved: {cpu: 100m, memory: 100Mi}
---
apiVersion: v1
kind: Namespace
metadata:
  name: kept
"""


def _convert(*paths: Path, text: str | None = None, tmp_path: Path | None = None) -> str:
    args = ["convert"]
    if text is not None:
        assert tmp_path is not None
        source = tmp_path / "old.yaml"
        source.write_text(text)
        paths = (source,)
    for path in paths:
        args += ["-f", str(path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_simulate_says_the_intro_provisioner_is_not_served_and_names_the_command() -> None:
    result = CliRunner().invoke(main, ["simulate", "-f", str(INTRO), "-f", str(CATALOG), "-f", str(INFLATE)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"warning: Provisioner default ({INTRO}, document 1) is karpenter.sh/v1alpha5, which kapstan does "
        f"not serve (it reads karpenter.sh/v1 NodePools): convert it with `kapstan convert -f {INTRO}`"
    ]
    assert "0 new nodes" in result.stdout


def test_the_intro_provisioner_converts_and_then_plans() -> None:
    converted = _convert(INTRO)
    documents = [d for d in yaml.safe_load_all(converted) if d]
    pool = next(d for d in documents if d["kind"] == "NodePool")
    assert pool["apiVersion"] == "karpenter.sh/v1"
    assert pool["spec"]["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "m5.2xlarge"]}
    ]
    assert "# spec.ttlSeconds: 600 is not a v1alpha5 Provisioner field: left out" in converted
    manifests = load_text(converted + "\n---\n" + CATALOG.read_text() + "\n---\n" + INFLATE.read_text())
    assert manifests.not_served == []
    plan = scheduling.solve(build_snapshot(manifests))
    assert plan.unschedulable == {}
    assert sum(len(claim.pods) for claim in plan.node_claims) == 8
    assert {claim.node_pool for claim in plan.node_claims} == {"default"}
    # m5.xlarge is in the catalog and would fit; the converted requirement keeps it out.
    assert {claim.instance_type for claim in plan.node_claims} <= {"m5.large", "m5.2xlarge"}


def test_every_field_maps_or_is_a_comment(tmp_path: Path) -> None:
    converted = _convert(text=FULL, tmp_path=tmp_path)
    documents = [d for d in yaml.safe_load_all(converted) if d]
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in documents}
    batch = by_name[("NodePool", "batch")]
    assert batch["metadata"] == {"name": "batch"}  # no uid, no status
    assert "status" not in batch
    spec = batch["spec"]
    assert spec["template"]["metadata"] == {"labels": {"team": "batch"}, "annotations": {"owner": "data"}}
    template = spec["template"]["spec"]
    assert template["taints"] == [{"key": "batch", "effect": "NoSchedule"}]
    assert template["startupTaints"][0]["key"] == "node.cilium.io/agent-not-ready"
    assert template["requirements"][0] == {
        "key": "karpenter.sh/nodepool",
        "operator": "In",
        "values": ["batch"],
    }
    assert template["expireAfter"] == "2592000s"
    assert template["nodeClassRef"] == {
        "group": "karpenter.cluster.x-k8s.io",
        "kind": "ClusterAPINodeClass",
        "name": "al2",
    }
    assert spec["limits"] == {"cpu": "100", "memory": "400Gi"}
    assert spec["weight"] == 20
    assert spec["disruption"] == {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    web = by_name[("NodePool", "web")]["spec"]
    assert web["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    assert web["template"]["spec"]["expireAfter"] == "Never"
    # Both reserve the same on al2: one NodeClass, carrying it.
    assert by_name[("ClusterAPINodeClass", "al2")]["spec"] == {
        "kubelet": {"systemReserved": {"cpu": "100m", "memory": "100Mi"}}
    }
    assert ("AWSNodeTemplate", "al2") not in by_name
    assert by_name[("Namespace", "kept")] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "kept"},
    }
    for comment in (
        "# kubeletConfiguration.maxPods: 58 has no ClusterAPINodeClass equivalent",
        "# kubeletConfiguration.clusterDNS: ['10.0.1.100'] has no ClusterAPINodeClass equivalent",
        "# requirement on karpenter.k8s.aws/instance-family: an AWS label",
        "# AWSNodeTemplate al2 spec.amiFamily: AL2 has no Cluster API equivalent",
        "# AWSNodeTemplate al2 spec.subnetSelector: {'karpenter.sh/discovery': 'my-cluster'} has no Cluster API",
        "# spec.ttlSecondsAfterEmpty: 30 -> consolidationPolicy: WhenEmpty, consolidateAfter: 30s",
        "# spec.consolidation.enabled: true -> consolidationPolicy: WhenEmptyOrUnderutilized",
    ):
        assert comment in converted, comment
    # What comes out is what kapstan reads.
    manifests = load_text(converted)
    assert [p.name for p in manifests.node_pools] == ["batch", "web"]
    assert [c.name for c in manifests.node_classes] == ["al2"]
    assert manifests.not_served == []


def test_different_kubelet_reservations_on_one_provider_get_a_node_class_each(tmp_path: Path) -> None:
    text = """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: a}
spec:
  providerRef: {name: shared}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: b}
spec:
  providerRef: {name: shared}
  kubeletConfiguration: {kubeReserved: {cpu: 200m}}
"""
    documents = [d for d in yaml.safe_load_all(_convert(text=text, tmp_path=tmp_path)) if d]
    refs = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        for d in documents
        if d["kind"] == "NodePool"
    }
    assert refs == {"a": "shared", "b": "shared-b"}
    classes = {d["metadata"]["name"]: d["spec"] for d in documents if d["kind"] == "ClusterAPINodeClass"}
    assert classes == {"shared": {}, "shared-b": {"kubelet": {"kubeReserved": {"cpu": "200m"}}}}
