"""The models read real manifests (the article's) and reject what Karpenter and Kubernetes reject, each
error naming the object and the field."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from kapstan.api import ManifestError, load_manifests, load_text
from kapstan.api.core import Pod
from kapstan.api.karpenter import Requirement

SCENARIOS = Path(__file__).parents[1] / "scenarios"

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - {requirement}
      nodeClassRef: {{group: karpenter.cluster.x-k8s.io, kind: ClusterAPINodeClass, name: default}}
      expireAfter: {expire}
"""


def nodepool_error(requirement: str = "{key: a, operator: In, values: [x]}", expire: str = "720h") -> str:
    with pytest.raises(ManifestError) as caught:
        load_text(NODEPOOL.format(requirement=requirement, expire=expire))
    return str(caught.value)


def test_article_nodepool_and_nodeclass() -> None:
    manifests = load_manifests([SCENARIOS / "article-catalog-mds.yaml"])
    (pool,) = manifests.node_pools
    spec = pool.spec.template.spec
    assert [(r.key, r.operator, r.values) for r in spec.requirements] == [
        ("kubernetes.io/arch", "In", ["amd64"]),
        ("karpenter.sh/capacity-type", "In", ["on-demand"]),
    ]
    assert (spec.node_class_ref.kind, spec.node_class_ref.name) == ("ClusterAPINodeClass", "default")
    assert spec.expire_after is None  # Never
    assert pool.spec.limits == {"cpu": 20_000}
    assert pool.spec.disruption.consolidation_policy == "WhenEmpty"
    assert pool.spec.disruption.consolidate_after == timedelta(seconds=30)
    assert [b.nodes for b in pool.spec.disruption.budgets] == ["10%"]
    (node_class,) = manifests.node_classes
    assert node_class.spec.price_table == {} and node_class.spec.price_table_ref is None


def test_article_machine_deployment() -> None:
    manifests = load_manifests([SCENARIOS / "article-catalog-mds.yaml"])
    md = next(md for md in manifests.machine_deployments if md.name == "capi-ovh-karpenter-c3-4")
    assert md.metadata.labels == {"node.cluster.x-k8s.io/karpenter-member": ""}
    assert md.metadata.annotations["capacity.cluster-autoscaler.kubernetes.io/memory"] == "4G"
    assert md.spec.replicas == 0 and md.spec.selector.match_labels == {}  # `matchLabels: null`
    ref = md.spec.template.spec.infrastructure_ref
    assert (ref.group, ref.kind, ref.name) == (
        "infrastructure.cluster.x-k8s.io",
        "OpenStackMachineTemplate",
        md.name,
    )
    template = manifests.infra_templates[("OpenStackMachineTemplate", "default", md.name)]
    assert template.spec["template"]["spec"]["flavor"] == "c3-4"
    bootstrap = manifests.kubeadm_config_templates[("KubeadmConfigTemplate", "default", md.name)]
    assert [(t.key, t.effect) for t in bootstrap.taints] == [("karpenter.sh/unregistered", "NoExecute")]


def test_article_cluster_topology_and_class() -> None:
    manifests = load_manifests([SCENARIOS / "article-catalog-clusterclass.yaml"])
    (cluster,) = manifests.clusters
    assert cluster.spec.topology is not None
    assert cluster.spec.topology.class_ref.name == "capi-ovh"
    assert [(w.class_, w.name, w.replicas) for w in cluster.spec.topology.workers.machine_deployments] == [
        ("default-worker", "md-0", 1),
        ("c3-4", "karpenter-c3-4", None),
        ("c3-8", "karpenter-c3-8", None),
        ("c3-16", "karpenter-c3-16", None),
    ]
    (cluster_class,) = manifests.cluster_classes
    worker = cluster_class.spec.workers.machine_deployments[1]
    assert worker.metadata.annotations["kapstan.io/managed"] == "true"
    assert worker.infrastructure.template_ref.group == "infrastructure.cluster.x-k8s.io"


def test_article_anti_affinity_deployment_expands_to_named_pods() -> None:
    manifests = load_manifests([SCENARIOS / "inflate-anti-affinity.yaml"])
    (deployment,) = manifests.workloads
    pods = deployment.pods()
    assert [(p.namespace, p.name) for p in pods] == [("default", "inflate-0"), ("default", "inflate-1")]
    (term,) = pods[0].spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    assert term.topology_key == "kubernetes.io/hostname"
    assert term.label_selector is not None and term.label_selector.match_labels == {"app": "inflate"}
    assert pods[0].spec.effective_requests() == {"cpu": 500, "memory": 256 * 2**20 * 1000}


def pod(spec: str) -> Pod:
    (parsed,) = load_text(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n{spec}").workloads
    assert isinstance(parsed, Pod)
    return parsed


def test_init_containers_and_sidecars_follow_kube_scheduler() -> None:
    requests = pod("""
  initContainers:
    - {name: setup, resources: {requests: {cpu: "2", memory: 1Gi}}}
    - {name: proxy, restartPolicy: Always, resources: {requests: {cpu: 300m, memory: 64Mi}}}
    - {name: migrate, resources: {requests: {cpu: 1900m}}}
  containers:
    - {name: app, resources: {requests: {cpu: 500m, memory: 256Mi}}}
    - {name: limits-only, resources: {limits: {cpu: 200m}}}
  overhead: {cpu: 10m}
""").spec.effective_requests()
    # cpu: max(app 500 + limits-only 200 + proxy 300, setup 2000, migrate 1900 + proxy 300) + overhead 10
    # memory: max(256Mi + 64Mi, setup 1Gi) = 1Gi
    assert requests == {"cpu": 2210, "memory": 2**30 * 1000}


def test_pod_level_requests_replace_the_containers_sum_for_their_resources() -> None:
    # kube-scheduler's PodRequests with PodLevelResources (beta, on by default since 1.34): pod-level
    # cpu replaces the containers' cpu; memory, not set at pod level, stays the containers' sum.
    requests = pod("""
  resources: {requests: {cpu: "3"}}
  containers:
    - {name: a, resources: {requests: {cpu: 500m, memory: 256Mi}}}
    - {name: b, resources: {requests: {cpu: 500m, memory: 256Mi}}}
  overhead: {cpu: 10m}
""").spec.effective_requests()
    assert requests == {"cpu": 3010, "memory": 512 * 2**20 * 1000}


def test_pod_level_limits_default_the_requests_the_containers_leave_unset() -> None:
    # The API server defaults pod-level requests: to the containers' sum where they request the
    # resource, else to the pod-level limit. Resources pod level does not support (here
    # ephemeral-storage) stay per container.
    requests = pod("""
  resources:
    limits: {cpu: "2", memory: 4Gi, ephemeral-storage: 9Gi}
  containers:
    - {name: a, resources: {requests: {cpu: 250m, ephemeral-storage: 1Gi}}}
""").spec.effective_requests()
    assert requests == {"cpu": 250, "memory": 4 * 2**30 * 1000, "ephemeral-storage": 2**30 * 1000}


def test_pod_level_hugepages_are_supported() -> None:
    requests = pod("""
  resources: {requests: {hugepages-2Mi: 64Mi}}
  containers:
    - {name: a, resources: {requests: {cpu: 100m}}}
""").spec.effective_requests()
    assert requests == {"cpu": 100, "hugepages-2Mi": 64 * 2**20 * 1000}


def test_host_ports() -> None:
    spec = pod("""
  hostNetwork: true
  containers:
    - name: a
      ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP, hostIP: 10.0.0.1}]
""").spec
    assert [(p.host_port, p.protocol, p.host_ip) for p in spec.host_ports()] == [
        (80, "TCP", ""),
        (53, "UDP", "10.0.0.1"),
    ]
    plain = pod(
        "  containers: [{name: a, ports: [{containerPort: 80}, {containerPort: 81, hostPort: 8081}]}]"
    ).spec
    assert [p.host_port for p in plain.host_ports()] == [8081]


def test_job_runs_min_of_parallelism_and_completions() -> None:
    manifests = load_text("""
apiVersion: batch/v1
kind: Job
metadata: {name: batch, namespace: jobs}
spec:
  parallelism: 5
  completions: 3
  template: {spec: {containers: [{name: c}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template: {spec: {containers: [{name: c}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template: {spec: {containers: [{name: c}]}}
""")
    names = [(p.namespace, p.name) for w in manifests.workloads for p in w.pods()]
    assert names == [
        ("jobs", "batch-0"),
        ("jobs", "batch-1"),
        ("jobs", "batch-2"),
        ("default", "once-0"),
        ("default", "db-0"),
    ]


def test_unknown_operator_names_object_and_field() -> None:
    assert nodepool_error("{key: a, operator: Equalz, values: [x]}") == (
        'NodePool default: spec.template.spec.requirements[0].operator: unknown operator "Equalz" '
        "(expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte) (in <stdin>, document 1)"
    )


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (
            "{key: a, operator: Gt, values: ['1.5']}",
            "requirements[0].values: operator Gt needs exactly one integer",
        ),
        (
            "{key: a, operator: Lt, values: ['1', '2']}",
            "requirements[0].values: operator Lt needs exactly one integer",
        ),
        (
            "{key: a, operator: In, values: []}",
            "requirements[0].values: operator In needs at least one value",
        ),
        ("{key: a, operator: In}", "requirements[0].values: operator In needs at least one value"),
        (
            "{key: a, operator: Exists, values: [x]}",
            "requirements[0].values: operator Exists takes no values",
        ),
        (
            "{key: a, operator: In, values: [x], minValues: 2}",
            "requirements[0].minValues: minValues 2 is more than",
        ),
    ],
)
def test_requirement_errors(requirement: str, message: str) -> None:
    assert message in nodepool_error(requirement)


def test_comparison_and_min_values_accepted() -> None:
    manifests = load_text(
        NODEPOOL.format(requirement="{key: cpu, operator: Gte, values: ['4']}", expire="1h30m")
    )
    assert manifests.node_pools[0].spec.template.spec.expire_after == timedelta(minutes=90)


@pytest.mark.parametrize("expire", ["30", "1d", "forever", "never"])
def test_bad_durations(expire: str) -> None:
    assert "spec.template.spec.expireAfter: invalid duration" in nodepool_error(expire=expire)


def test_bad_quantity_in_limits_and_budget() -> None:
    text = NODEPOOL.format(requirement="{key: a, operator: Exists}", expire="Never")
    with pytest.raises(ManifestError, match=r"spec.limits.cpu: invalid quantity '20 cores'"):
        load_text(text + "  limits: {cpu: 20 cores}\n")
    with pytest.raises(ManifestError, match=r"spec.disruption.budgets\[0\].nodes: invalid budget '110%'"):
        load_text(text + "  disruption: {budgets: [{nodes: 110%}]}\n")


def test_nodeclass_kubelet_and_price_table() -> None:
    (node_class,) = load_text("""
apiVersion: karpenter.cluster.x-k8s.io/v1alpha1
kind: ClusterAPINodeClass
metadata: {name: priced}
spec:
  kubelet:
    kubeReserved: {cpu: 100m, memory: 256Mi}
    evictionHard: {memory.available: 100Mi, nodefs.available: 10%}
  priceTable: {c3-4: "0.0464", c3-8: 0.0928}
  priceTableRef: {name: prices, namespace: kapstan}
""").node_classes
    spec = node_class.spec
    assert spec.kubelet.kube_reserved == {"cpu": 100, "memory": 256 * 2**20 * 1000}
    assert spec.kubelet.eviction_hard["memory.available"].of(10**12) == 100 * 2**20 * 1000
    assert spec.kubelet.eviction_hard["nodefs.available"].of(10**12) == 10**11
    assert spec.price_table == {"c3-4": 0.0464, "c3-8": 0.0928}
    assert spec.price_table_ref is not None and spec.price_table_ref.namespace == "kapstan"


def test_bad_price_names_flavor() -> None:
    with pytest.raises(
        ManifestError, match=r"ClusterAPINodeClass x: spec.priceTable.c3-4: invalid price 'cheap'"
    ):
        load_text("""
apiVersion: karpenter.cluster.x-k8s.io/v1alpha1
kind: ClusterAPINodeClass
metadata: {name: x}
spec: {priceTable: {c3-4: cheap}}
""")


def test_nodepool_comparison_requirements_take_non_negative_int64_values() -> None:
    assert Requirement(key="example.com/gen", operator="Gt", values=["+5"]).values == ["+5"]
    for bad in (["-1"], ["+-5"], ["9" * 45], ["1", "2"]):
        with pytest.raises(ValueError, match="operator Gt"):
            Requirement(key="example.com/gen", operator="Gt", values=bad)
