"""The Karpenter peer's input: a snapshot as the Pod and NodePool JSON Karpenter's scheduler reads."""

from __future__ import annotations

from bench.peers.export import export, pod_json, quantity

from kapstan.bench.catalogs import GPU, MI, requests
from kapstan.bench.workloads import capi_catalog, karpenter_mix
from kapstan.scheduling.model import CPU, HOSTNAME, MEMORY, LabelSelector, Pod, PodAffinityTerm, Toleration


def test_quantities_keep_millicores_and_whole_bytes() -> None:
    assert quantity(CPU, 250) == "250m"
    assert quantity(MEMORY, 512 * MI * 1000) == str(512 * MI)
    assert quantity(GPU, 1000) == "1"


def test_pod_keeps_requests_and_anti_affinity_but_not_the_pod_slot() -> None:
    term = PodAffinityTerm(LabelSelector((("app", "nginx"),)), HOSTNAME, ("bench",))
    pod = Pod(
        "bench",
        "web-0",
        requests(1500, 256 * MI),
        labels={"app": "nginx"},
        anti_affinity=(term,),
        tolerations=(Toleration("dedicated", "Exists", effect="NoSchedule"),),
    )
    out = pod_json(pod)
    container = out["spec"]["containers"][0]
    # Karpenter adds one pod slot per pod itself; exporting ours too would count it twice.
    assert container["resources"]["requests"] == {"cpu": "1500m", "memory": str(256 * MI)}
    anti = out["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == [
        {"labelSelector": {"matchLabels": {"app": "nginx"}}, "topologyKey": HOSTNAME, "namespaces": ["bench"]}
    ]
    assert out["spec"]["tolerations"] == [{"operator": "Exists", "key": "dedicated", "effect": "NoSchedule"}]


def test_tainted_flavors_get_a_nodepool_of_their_own() -> None:
    exported = export(capi_catalog(50), "capi-50")
    pools = {p["metadata"]["name"]: p for p in exported.workload["nodePools"]}
    assert set(pools) == {"default", "default-nvidia-com-gpu"}
    assert exported.workload["poolFlavors"]["default-nvidia-com-gpu"] == ["l4-90"]
    assert "l4-90" not in exported.workload["poolFlavors"]["default"]
    taints = pools["default-nvidia-com-gpu"]["spec"]["template"]["spec"]["taints"]
    assert taints == [{"key": GPU, "effect": "NoSchedule", "value": "present"}]
    assert exported.pool_of == {"default": "default", "default-nvidia-com-gpu": "default"}


def test_flavors_carry_every_offering_with_its_price() -> None:
    exported = export(karpenter_mix(10), "mix-10")
    first = exported.workload["flavors"][0]
    assert first["name"] == "fake-it-0"
    assert first["capacity"] == {"cpu": "1000m", "memory": str(2 << 30), "pods": "10"}
    assert [(o["zone"], round(o["price"], 6)) for o in first["offerings"]] == [
        ("test-zone-1", 0.3),
        ("test-zone-2", 0.3),
        ("test-zone-3", 0.3),
    ]
    assert len(exported.workload["pods"]) == 10
    assert len(exported.workload["daemonSetPods"]) == 1
