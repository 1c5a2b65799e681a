"""From manifests to the solver's Snapshot: pending and bound pods, nodes, in-flight claims, NodePool
limits and usage, DaemonSets, and resolved (anti-)affinity and spread terms."""

from __future__ import annotations

from pathlib import Path

import pytest

from kapstan.api import ManifestError, load_manifests, load_text
from kapstan.scheduling import solve
from kapstan.scheduling.model import LabelSelector, LabelSelectorRequirement, PodAffinityTerm, Snapshot, Taint
from kapstan.scheduling.validator import validate
from kapstan.snapshot import build_simulation_input, build_snapshot

SCENARIOS = Path(__file__).parent / "scenarios"
MI = 2**20 * 1000

CATALOG = (SCENARIOS / "article-catalog-mds.yaml").read_text()
AGENT_CPU, AGENT_MEMORY, ONE_POD = 100, 128 * MI, 1000
"""The catalog's node agent DaemonSet requests (100m, 128Mi, a pod): set aside on every node that will run
it and has no pod of it yet (snapshot_daemons)."""


def snapshot_of(text: str) -> Snapshot:
    return build_snapshot(load_text(CATALOG + "\n---\n" + text))


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


CLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default-abcde
  labels: {karpenter.sh/nodepool: default, node.kubernetes.io/instance-type: c3-4,
           topology.kubernetes.io/zone: nova}
spec:
  nodeClassRef: {group: karpenter.cluster.x-k8s.io, kind: ClusterAPINodeClass, name: default}
  startupTaints: [{key: example.com/booting, effect: NoSchedule}]
"""


def test_launching_nodeclaim_is_a_node_and_counts_against_limits() -> None:
    snapshot = snapshot_of(CLAIM)
    (node,) = snapshot.nodes
    assert node.name == "default-abcde" and node.node_pool == "default" and node.taints == ()
    assert (
        node.labels["topology.kubernetes.io/zone"] == "nova" and node.labels["kubernetes.io/arch"] == "amd64"
    )
    # Its node agent will take its share once it joins: that is no room for pending pods.
    assert node.allocatable == {"cpu": 2000 - AGENT_CPU, "memory": 4 * 10**12 - AGENT_MEMORY, "pods": 109_000}
    assert snapshot.node_pools[0].usage == {"cpu": 2000, "memory": 4 * 10**12, "pods": 110_000, "nodes": 1000}


JOINED = (
    CLAIM
    + """status:
  providerID: test://machine-1
  nodeName: machine-1
  allocatable: {cpu: "2", memory: 4G, pods: "110"}
  conditions: [{type: Initialized, status: "%s"}]
---
apiVersion: v1
kind: Node
metadata: {name: machine-1}
spec:
  providerID: test://machine-1
  taints:
  - {key: karpenter.sh/unregistered, effect: NoExecute}
  - {key: node.kubernetes.io/not-ready, effect: NoSchedule}
  - {key: example.com/booting, effect: NoSchedule}
  - {key: dedicated, value: db, effect: NoSchedule}
"""
)


def test_a_joining_node_is_what_its_claim_says_until_initialized() -> None:
    """Pods pending for a node that has just joined must count on it, not launch another."""
    (node,) = snapshot_of(JOINED % "False").nodes
    assert node.name == "machine-1" and node.node_pool == "default"
    assert node.labels["node.kubernetes.io/instance-type"] == "c3-4"
    assert node.allocatable == {"cpu": 2000 - AGENT_CPU, "memory": 4 * 10**12 - AGENT_MEMORY, "pods": 109_000}
    assert node.taints == (Taint("dedicated", "NoSchedule", "db"),)  # not ephemeral: it stays
    (ready,) = snapshot_of(JOINED % "True").nodes
    assert {t.key for t in ready.taints} == {
        "karpenter.sh/unregistered",
        "node.kubernetes.io/not-ready",
        "example.com/booting",
        "dedicated",
    }
    assert "node.kubernetes.io/instance-type" not in ready.labels and ready.allocatable == {}


DELETING = """
apiVersion: v1
kind: Node
metadata:
  name: going
  deletionTimestamp: "2026-01-01T00:00:00Z"
  labels: {karpenter.sh/nodepool: default, node.kubernetes.io/instance-type: c3-16}
status: {allocatable: {cpu: "8", memory: 16G, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: evicted-soon}
spec:
  nodeName: going
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: terminating, deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {nodeName: going, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: agent-x
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent}]
spec: {nodeName: going, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def test_a_deleting_node_is_no_capacity_and_its_pods_are_rescheduled() -> None:
    """Karpenter's provisioner leaves nodes marked for deletion out of the capacity and schedules the
    reschedulable pods on them again (not DaemonSet pods, not pods already terminating)."""
    snapshot = snapshot_of(DELETING)
    assert snapshot.nodes == ()
    assert [p.key for p in snapshot.pods] == ["default/evicted-soon", "default/pending"]


def test_a_node_whose_nodeclaim_is_deleting_is_no_capacity() -> None:
    marked = 'name: default-abcde\n  deletionTimestamp: "2026-01-01T00:00:00Z"'
    assert snapshot_of((JOINED % "True").replace("name: default-abcde", marked, 1)).nodes == ()
    assert snapshot_of(CLAIM.replace("name: default-abcde", marked, 1)).nodes == ()


def test_a_claim_whose_node_registered_then_vanished_is_no_capacity_in_flight(engine: str) -> None:
    """Issue 15: a Node deleted out of band left its Registered claim counted as a node on its way, so the
    pod's replacement stayed Pending ("pods": 1, "nodeclaims": 0)."""
    vanished = (JOINED % "True").split("---")[0]  # the claim names nodeName machine-1, no such Node
    pending = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: moved}\nspec:\n  containers: [{name: c, resources: {requests: {cpu: '1'}}}]\n"
    snapshot = snapshot_of(vanished + pending)
    assert snapshot.nodes == ()
    plan = solve(snapshot, engine)
    assert [c.pods for c in plan.node_claims] == [("default/moved",)]


def test_pods_on_a_deleting_node_get_new_capacity(engine: str) -> None:
    snapshot = snapshot_of(DELETING)
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    assert plan.existing_nodes == {} and plan.unschedulable == {}
    assert sorted(p for c in plan.node_claims for p in c.pods) == ["default/evicted-soon", "default/pending"]


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


PENDING_1CPU = """
---
apiVersion: v1
kind: Pod
metadata: {name: p%d, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def _planned_on(text: str, planned_on: dict[str, str]) -> Snapshot:
    manifests = load_text(CATALOG + "\n---\n" + text)
    return build_simulation_input(manifests, planned_on=planned_on).snapshot


def test_pods_planned_on_a_launching_claim_stay_on_it_while_they_fit() -> None:
    pods = "".join(PENDING_1CPU % i for i in range(4))
    planned = {f"default/p{i}": "default-abcde" for i in range(3)}  # p3 came later, it has no claim
    snapshot = _planned_on(CLAIM + pods, planned)
    (node,) = snapshot.nodes
    # The c3-4 claim (2 CPU, 1.9 beside its node agent) takes back p0; p1 and p2 no longer fit (their room
    # went, say, to a smaller fallback flavor), so they are planned again with p3.
    assert [pod.key for pod in node.pods] == ["default/p0"]
    assert [pod.key for pod in snapshot.pods] == ["default/p1", "default/p2", "default/p3"]
    assert [pod.key for pod in snapshot_of(CLAIM + pods).pods] == [f"default/p{i}" for i in range(4)]


def test_pods_planned_on_an_initialized_or_deleting_claim_are_pending() -> None:
    pods = PENDING_1CPU % 0
    initialized = _planned_on(JOINED % "True" + pods, {"default/p0": "default-abcde"})
    assert [pod.key for pod in initialized.pods] == ["default/p0"]
    joining = _planned_on(JOINED % "False" + pods, {"default/p0": "default-abcde"})
    assert joining.pods == () and [pod.key for pod in joining.nodes[0].pods] == ["default/p0"]
    deleting = CLAIM.replace(
        "  name: default-abcde",
        "  name: default-abcde\n  deletionTimestamp: 2026-01-01T00:00:00Z\n  finalizers: [karpenter.sh/termination]",
    )
    assert [pod.key for pod in _planned_on(deleting + pods, {"default/p0": "default-abcde"}).pods] == [
        "default/p0"
    ]


AGENT_POD = """
---
apiVersion: v1
kind: Pod
metadata:
  name: node-agent-%s
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: node-agent, uid: "1"}]
spec:
  nodeName: %s
  containers: [{name: agent, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
"""


def test_a_node_running_its_daemonset_pod_keeps_its_allocatable_and_counts_the_pod() -> None:
    (node,) = snapshot_of(JOINED % "False" + AGENT_POD % ("x", "machine-1")).nodes
    assert node.allocatable == {"cpu": 2000, "memory": 4 * 10**12, "pods": 110_000}
    assert [pod.key for pod in node.pods] == ["kube-system/node-agent-x"]


def test_no_room_is_set_aside_for_a_daemonset_the_node_does_not_admit() -> None:
    picky = CATALOG.replace("        - operator: Exists\n", "        - {key: other, operator: Exists}\n")
    assert picky != CATALOG
    manifests = load_text(picky + "\n---\n" + JOINED % "False")
    (node,) = build_snapshot(manifests).nodes
    # The agent does not tolerate the claim's "dedicated" taint: it will not run there.
    assert node.allocatable == {"cpu": 2000, "memory": 4 * 10**12, "pods": 110_000}


def test_pending_pods_are_not_planned_into_the_room_of_a_joining_nodes_daemonset(engine: str) -> None:
    """Issue 14: the next batch filled the room the node agent was promised, kube-scheduler bound those
    pods first and the agent stayed Pending on a full node."""
    joining = (JOINED % "False").replace("  - {key: dedicated, value: db, effect: NoSchedule}\n", "")
    late = PENDING_1CPU.replace('cpu: "1"', "cpu: 1950m").replace("name: p%d", "name: late")
    snapshot = snapshot_of(joining + late)
    assert [node.name for node in snapshot.nodes] == ["machine-1"] and snapshot.nodes[0].taints == ()
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    # 1950m fits the c3-4's 2 CPU, not the 1.9 left beside its node agent: a new claim, not machine-1.
    assert dict(plan.existing_nodes).get("machine-1", ()) == ()
    assert [c.pods for c in plan.node_claims] == [("default/late",)]
