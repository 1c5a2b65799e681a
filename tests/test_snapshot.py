"""From manifests to the solver's Snapshot: pending and bound pods, nodes, NodePool limits and usage,
DaemonSets, and resolved (anti-)affinity and spread terms. Claims and nodes on their way in or out are in
test_snapshot_in_flight.py."""

from __future__ import annotations

import pytest

from kapstan.api import ManifestError, load_manifests, load_text
from kapstan.scheduling.model import LabelSelector, LabelSelectorRequirement, PodAffinityTerm, Snapshot, Taint
from kapstan.snapshot import build_simulation_input, build_snapshot
from snapshot_kit import AGENT_CPU, AGENT_MEMORY, CATALOG, MI, ONE_POD, SCENARIOS, snapshot_of


def test_article_snapshot() -> None:
    result = build_simulation_input(
        load_manifests([SCENARIOS / "article-catalog-mds.yaml", SCENARIOS / "inflate-8x1cpu.yaml"])
    )
    snapshot = result.snapshot
    assert [p.key for p in snapshot.pods] == [f"default/inflate-{i}" for i in range(8)]
    assert snapshot.pods[0].requests == {"cpu": 1000, "memory": 256 * MI, "pods": 1000}
    assert [it.name for it in snapshot.instance_types] == ["c3-4", "c3-8", "c3-16"]
    (pool,) = snapshot.node_pools
    assert pool.limits == {"cpu": 20_000} and pool.usage == {}
    assert pool.instance_types == ("c3-4", "c3-8", "c3-16")
    assert [r.key for r in pool.requirements] == ["kubernetes.io/arch", "karpenter.sh/capacity-type"]
    (daemonset,) = snapshot.daemonsets
    assert daemonset.name == "kube-system/node-agent"
    assert daemonset.pod.requests == {"cpu": 100, "memory": 128 * MI, "pods": 1000}
    assert snapshot.namespace_labels["kube-system"] == {"kubernetes.io/metadata.name": "kube-system"}
    assert result.catalog.sources[("c3-16", "nova", "on-demand")].name == "capi-ovh-karpenter-c3-16"


def test_clusterclass_variant_gives_the_same_snapshot() -> None:
    def load(catalog: str) -> Snapshot:
        return build_snapshot(load_manifests([SCENARIOS / catalog, SCENARIOS / "one-3cpu-pod.yaml"]))

    assert load("article-catalog-clusterclass.yaml") == load("article-catalog-mds.yaml")


def test_missing_nodeclass() -> None:
    text = CATALOG.replace("name: default\n      expireAfter", "name: x\n      expireAfter")
    with pytest.raises(ManifestError) as caught:
        build_snapshot(load_text(text))
    assert (
        str(caught.value)
        == 'NodePool default: spec.template.spec.nodeClassRef: ClusterAPINodeClass "x" not found'
    )


def test_foreign_nodeclass_kind() -> None:
    text = CATALOG.replace("kind: ClusterAPINodeClass\n        name", "kind: EC2NodeClass\n        name")
    with pytest.raises(ManifestError, match=r"nodeClassRef: unsupported node class EC2NodeClass"):
        build_snapshot(load_text(text))


def test_nodes_bound_pods_and_pool_usage() -> None:
    snapshot = snapshot_of("""
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {karpenter.sh/nodepool: default, node.kubernetes.io/instance-type: c3-8}
spec:
  taints: [{key: dedicated, value: db, effect: NoSchedule}]
status:
  capacity: {cpu: "4", memory: 8G, pods: "110"}
  allocatable: {cpu: 3900m, memory: 7G, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: cordoned}
spec: {unschedulable: true}
status: {allocatable: {cpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: db}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec: {containers: [{name: c}]}
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec: {containers: [{name: c}]}
""")
    n1, cordoned = snapshot.nodes
    assert n1.node_pool == "default" and n1.labels["kubernetes.io/hostname"] == "n1"
    # The node agent tolerates every taint and the cordon: its room is set aside on both nodes.
    assert n1.allocatable == {
        "cpu": 3900 - AGENT_CPU,
        "memory": 7 * 10**12 - AGENT_MEMORY,
        "pods": 110_000 - ONE_POD,
    }
    assert n1.taints == (Taint("dedicated", "NoSchedule", "db"),)
    assert [p.key for p in n1.pods] == ["db/running"]
    assert cordoned.unschedulable and cordoned.node_pool is None
    assert cordoned.allocatable == {"cpu": 2000 - AGENT_CPU}
    assert [p.key for p in snapshot.pods] == ["default/pending"]
    (pool,) = snapshot.node_pools
    assert pool.usage == {"cpu": 4000, "memory": 8 * 10**12, "pods": 110_000, "nodes": 1000}


def test_nodepool_fields() -> None:
    (pool,) = build_snapshot(
        load_text("""
apiVersion: karpenter.cluster.x-k8s.io/v1alpha1
kind: ClusterAPINodeClass
metadata: {name: default}
spec: {}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  weight: 50
  limits: {cpu: "64", nodes: "4", nvidia.com/gpu: "8"}
  template:
    metadata: {labels: {team: ml}}
    spec:
      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [a, b, c], minValues: 2}]
      taints: [{key: gpu, effect: NoSchedule}]
      startupTaints: [{key: example.com/init, effect: NoExecute}]
      nodeClassRef: {group: karpenter.cluster.x-k8s.io, kind: ClusterAPINodeClass, name: default}
""")
    ).node_pools
    assert pool.weight == 50 and pool.labels == {"team": "ml"}
    assert pool.limits == {"cpu": 64_000, "nodes": 4000, "nvidia.com/gpu": 8000}
    assert pool.requirements[0].min_values == 2 and pool.requirements[0].values == ("a", "b", "c")
    assert pool.taints == (Taint("gpu", "NoSchedule"),)
    assert pool.startup_taints == (Taint("example.com/init", "NoExecute"),)


NAMESPACES = """
apiVersion: v1
kind: Namespace
metadata: {name: web, labels: {tier: front}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {tier: front}}
---
apiVersion: v1
kind: Namespace
metadata: {name: batch}
---
"""


def test_affinity_namespaces_and_label_keys_are_resolved() -> None:
    snapshot = snapshot_of(
        NAMESPACES
        + """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: api, pod-template-hash: abc, tenant: t1}}
    spec:
      containers: [{name: c}]
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: cache}}
              topologyKey: topology.kubernetes.io/zone
              namespaceSelector: {matchLabels: {tier: front}}
            - labelSelector: {matchLabels: {app: anything}}
              topologyKey: kubernetes.io/hostname
              namespaceSelector: {}
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 10
              podAffinityTerm: {labelSelector: {matchLabels: {app: db}}, topologyKey: kubernetes.io/hostname,
                                namespaces: [batch]}
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchExpressions: [{key: app, operator: In, values: [api]}]}
              topologyKey: kubernetes.io/hostname
              matchLabelKeys: [pod-template-hash, missing]
              mismatchLabelKeys: [tenant]
            - topologyKey: kubernetes.io/hostname
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: api}}
          matchLabelKeys: [pod-template-hash]
          minDomains: 3
        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
      tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]
"""
    )
    (pod,) = snapshot.pods
    same_zone, anywhere = pod.affinity
    assert same_zone.namespaces == ("shop", "web") and not same_zone.all_namespaces
    assert anywhere.all_namespaces
    assert pod.preferred_affinity[0].weight == 10 and pod.preferred_affinity[0].term.namespaces == ("batch",)
    (anti,) = pod.anti_affinity  # the term without labelSelector selects nothing: dropped
    assert anti == PodAffinityTerm(
        LabelSelector(
            match_expressions=(
                LabelSelectorRequirement("app", "In", ("api",)),
                LabelSelectorRequirement("pod-template-hash", "In", ("abc",)),
                LabelSelectorRequirement("tenant", "NotIn", ("t1",)),
            )
        ),
        "kubernetes.io/hostname",
        ("web",),
    )
    (spread,) = pod.spread  # the one without labelSelector counts no pods: dropped
    assert spread.min_domains == 3 and spread.node_taints_policy == "Ignore"
    assert spread.selector.match_expressions == (
        LabelSelectorRequirement("pod-template-hash", "In", ("abc",)),
    )
    assert pod.tolerations[0].operator == "Exists"
    assert snapshot.namespace_labels["web"] == {"tier": "front", "kubernetes.io/metadata.name": "web"}


def test_required_affinity_without_selector_matches_nothing() -> None:
    snapshot = snapshot_of("""
apiVersion: v1
kind: Pod
metadata: {name: lonely, labels: {app: lonely}}
spec:
  containers: [{name: c}]
  affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname}]}}
""")
    (term,) = snapshot.pods[0].affinity
    assert not term.selector.matches({"app": "lonely"}) and not term.selector.matches({})


def test_node_affinity_and_selector() -> None:
    snapshot = snapshot_of("""
apiVersion: v1
kind: Pod
metadata: {name: picky}
spec:
  containers: [{name: c, ports: [{containerPort: 8080, hostPort: 80}]}]
  nodeSelector: {kubernetes.io/arch: amd64}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions: [{key: node.kubernetes.io/instance-type, operator: In, values: [c3-8, c3-16]}]
          - matchFields: [{key: metadata.name, operator: In, values: [n1]}]
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 5
          preference: {matchExpressions: [{key: cpu, operator: Gt, values: ["4"]}]}
""")
    (pod,) = snapshot.pods
    assert pod.node_selector == {"kubernetes.io/arch": "amd64"}
    first, second = pod.required_terms
    assert [(r.key, r.values) for r in first] == [("node.kubernetes.io/instance-type", ("c3-8", "c3-16"))]
    assert [(r.key, r.values) for r in second] == [("kubernetes.io/hostname", ("n1",))]
    assert pod.preferred_terms[0].weight == 5 and pod.preferred_terms[0].term[0].operator == "Gt"
    assert [(h.port, h.protocol) for h in pod.host_ports] == [(80, "TCP")]


def test_daemonset_gets_controller_tolerations_and_its_pods_are_not_pending() -> None:
    snapshot = snapshot_of("""
apiVersion: v1
kind: Pod
metadata:
  name: node-agent-xyz
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: node-agent, uid: "1"}]
spec: {containers: [{name: c}]}
""")
    assert snapshot.pods == ()
    (daemonset,) = snapshot.daemonsets
    assert daemonset.pod.tolerations[0].operator == "Exists"  # its own
    assert any(
        t.tolerates(Taint("node.kubernetes.io/unschedulable", "NoSchedule"))
        for t in daemonset.pod.tolerations
    )


def test_pending_pods_keep_manifest_order() -> None:
    snapshot = snapshot_of("""
apiVersion: v1
kind: Pod
metadata: {name: first}
spec: {containers: [{name: c}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: team}
spec: {replicas: 2, template: {spec: {containers: [{name: c}]}}}
---
apiVersion: v1
kind: Pod
metadata: {name: last}
spec: {containers: [{name: c}]}
""")
    assert [p.key for p in snapshot.pods] == ["default/first", "team/rs-0", "team/rs-1", "default/last"]
