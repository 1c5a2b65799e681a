"""Seeded workload generators: each returns a `Snapshot` of pending pods against a catalog, no nodes.

Families:
- `mix`: Karpenter's scheduling benchmark mix (1/5 each: generic, zone spread, hostname spread, zone
  self-affinity, hostname anti-affinity) against the fake 400-flavor catalog. Unlike Karpenter's test,
  which draws a pod's label and its selector independently and gives generic pods the spread label too,
  each spread or affinity pod here belongs to the group its own selector names, one label key per kind,
  so every constraint binds on the pods it names.
- `generic`: the same pods' sizes, no constraints at all.
- `prefs`: preferences only (preferred zone affinity, unmeetable preferred zone anti-affinity, preferred
  hostname anti-affinity), which the engines must try hard and then relax.
- `capi`: an OVH-like catalog with prices, mixed pod sizes, large pods and a few GPU pods.
- `spread`: Deployments, each spread over the three zones (maxSkew 1, DoNotSchedule), against the
  general-purpose flavors and one pricey large flavor that claims grow into.
- `article`: the article's two experiments on c3-4/c3-8/c3-16.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from kapstan.bench import catalogs
from kapstan.bench.catalogs import GPU_TAINT, MI, requests
from kapstan.scheduling.model import (
    HOSTNAME,
    ZONE,
    DaemonSet,
    InstanceType,
    LabelSelector,
    NodePool,
    NodeSelectorRequirement,
    Pod,
    PodAffinityTerm,
    PreferredNodeTerm,
    Snapshot,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

NAMESPACE = "bench"
CPU_CHOICES = (100, 250, 500, 1000, 1500)
MEMORY_CHOICES_MI = (100, 256, 512, 1024, 2048, 4096)
LABEL_VALUES = ("a", "b", "c", "d", "e", "f", "g")


@dataclass(frozen=True)
class Workload:
    name: str
    family: str
    pods: int
    build: Callable[[], Snapshot]
    description: str


def _select(key: str, value: str) -> LabelSelector:
    return LabelSelector(match_labels=((key, value),))


def _term(key: str, value: str, topology_key: str) -> PodAffinityTerm:
    return PodAffinityTerm(_select(key, value), topology_key, (NAMESPACE,))


def _snapshot(pods: list[Pod], flavors: tuple[InstanceType, ...], ds: tuple[DaemonSet, ...]) -> Snapshot:
    return Snapshot(
        pods=tuple(pods), instance_types=flavors, node_pools=(NodePool("default"),), daemonsets=ds
    )


# -- Karpenter's mix ------------------------------------------------------------------------------------


def _mix_pod(rng: random.Random, kind: str, index: int) -> Pod:
    sizes = requests(rng.choice(CPU_CHOICES), rng.choice(MEMORY_CHOICES_MI) * MI)
    name = f"{kind}-{index}"
    value = rng.choice(LABEL_VALUES)
    if kind == "zone-spread" or kind == "host-spread":
        key = f"{kind}-group"
        topology = ZONE if kind == "zone-spread" else HOSTNAME
        spread = TopologySpreadConstraint(1, topology, "DoNotSchedule", _select(key, value))
        return Pod(NAMESPACE, name, sizes, labels={key: value}, spread=(spread,))
    if kind == "zone-affinity":
        key = "affinity-group"
        return Pod(NAMESPACE, name, sizes, labels={key: value}, affinity=(_term(key, value, ZONE),))
    if kind == "host-anti":
        labels = {"app": "nginx"}
        return Pod(NAMESPACE, name, sizes, labels=labels, anti_affinity=(_term("app", "nginx", HOSTNAME),))
    return Pod(NAMESPACE, name, sizes, labels={"my-label": value})


MIX_KINDS = ("generic", "zone-spread", "host-spread", "zone-affinity", "host-anti")


def karpenter_mix(count: int, seed: int = 1, generic_only: bool = False) -> Snapshot:
    """`count` pods split in fifths over MIX_KINDS (the remainder generic), or all generic."""
    rng = random.Random(seed)
    kinds = ["generic"] * count
    if not generic_only:
        share = count // len(MIX_KINDS)
        kinds = [k for k in MIX_KINDS for _ in range(share)]
        kinds += ["generic"] * (count - len(kinds))
    pods = [_mix_pod(rng, kind, i) for i, kind in enumerate(kinds)]
    return _snapshot(pods, catalogs.karpenter_flavors(), catalogs.karpenter_overhead())


# -- Preferences ----------------------------------------------------------------------------------------


def preferences(count: int = 4000, seed: int = 2, group_size: int = 40) -> Snapshot:
    """Deployments of `group_size` pods; every pod prefers one zone (weight 50), prefers no other pod of
    its deployment in its zone (unmeetable past three pods, weight 30) and on its node (weight 10)."""
    rng = random.Random(seed)
    pods = []
    for i in range(count):
        group = f"d{i // group_size}"
        zone = catalogs.KARPENTER_ZONES[(i // group_size) % len(catalogs.KARPENTER_ZONES)]
        sizes = requests(rng.choice(CPU_CHOICES), rng.choice(MEMORY_CHOICES_MI) * MI)
        prefer_zone = PreferredNodeTerm(50, (NodeSelectorRequirement(ZONE, "In", (zone,)),))
        apart = (
            WeightedPodAffinityTerm(30, _term("deployment", group, ZONE)),
            WeightedPodAffinityTerm(10, _term("deployment", group, HOSTNAME)),
        )
        pods.append(
            Pod(
                NAMESPACE,
                f"{group}-{i % group_size}",
                sizes,
                labels={"deployment": group},
                preferred_terms=(prefer_zone,),
                preferred_anti_affinity=apart,
            )
        )
    return _snapshot(pods, catalogs.karpenter_flavors(), catalogs.karpenter_overhead())


# -- CAPI catalog ---------------------------------------------------------------------------------------

# share, cpu choices (milli), memory choices (MiB)
CAPI_PROFILES: tuple[tuple[float, tuple[int, ...], tuple[int, ...]], ...] = (
    (0.55, (100, 200, 250, 500), (128, 256, 512)),  # web and sidecar-heavy services
    (0.25, (1000, 1500, 2000), (1024, 2048, 4096)),  # application servers
    (0.10, (500, 1000, 2000), (8192, 16384, 24576)),  # caches, JVMs: memory-heavy
    (0.07, (4000, 6000, 8000), (4096, 8192)),  # batch, builds: CPU-heavy
    (0.03, (12000, 14000), (49152, 98304)),  # large databases
)
GPU_SHARE = 0.01


def capi_catalog(count: int, seed: int = 3) -> Snapshot:
    """Mixed pod sizes (including large ones) and about 1% GPU pods against the OVH-like catalog."""
    rng = random.Random(seed)
    shares = [p[0] for p in CAPI_PROFILES]
    pods = []
    for i in range(count):
        if rng.random() < GPU_SHARE:
            sizes = requests(rng.choice((4000, 8000)), rng.choice((16384, 32768)) * MI, gpus=1)
            tolerate = (Toleration(GPU_TAINT.key, "Exists", effect="NoSchedule"),)
            pods.append(Pod(NAMESPACE, f"gpu-{i}", sizes, labels={"tier": "gpu"}, tolerations=tolerate))
            continue
        _, cpus, mems = rng.choices(CAPI_PROFILES, weights=shares)[0]
        sizes = requests(rng.choice(cpus), rng.choice(mems) * MI)
        pods.append(Pod(NAMESPACE, f"app-{i}", sizes, labels={"tier": "app"}))
    return _snapshot(pods, catalogs.capi_flavors(), catalogs.capi_overhead())


# -- Spread Deployments ---------------------------------------------------------------------------------

SPREAD_REPLICAS = (6, 12, 20, 30, 50)
SPREAD_SIZES: tuple[tuple[int, int], ...] = ((100, 128), (250, 512), (500, 1024), (1000, 2048), (2000, 4096))


def spread_deployments(count: int, seed: int = 4) -> Snapshot:
    """Deployments of 6 to 50 replicas of one size each, each spread over the zones by its own label,
    until `count` pods, against `catalogs.pricey_large_flavors()`."""
    rng = random.Random(seed)
    pods: list[Pod] = []
    deployment = 0
    while len(pods) < count:
        replicas = min(rng.choice(SPREAD_REPLICAS), count - len(pods))
        cpu, memory = rng.choice(SPREAD_SIZES)
        app = f"deploy-{deployment}"
        spread = TopologySpreadConstraint(1, ZONE, "DoNotSchedule", _select("app", app))
        for i in range(replicas):
            sizes = requests(cpu, memory * MI)
            pods.append(Pod(NAMESPACE, f"{app}-{i}", sizes, labels={"app": app}, spread=(spread,)))
        deployment += 1
    return _snapshot(pods, catalogs.pricey_large_flavors(), catalogs.capi_overhead())


# -- The article ----------------------------------------------------------------------------------------


def article_inflate() -> Snapshot:
    """Experiment 1: eight 1-CPU pods at once (first-fit by name pays for a c3-16 and more)."""
    pods = [
        Pod("default", f"inflate-{i}", requests(1000, 256 * MI), labels={"app": "inflate"}) for i in range(8)
    ]
    return _snapshot(pods, catalogs.article_flavors(), catalogs.article_overhead())


def article_big_pod() -> Snapshot:
    """Experiment 2: one pod asking 3 vCPU (c3-8 is right, c3-16 is overkill)."""
    pods = [Pod("default", "big", requests(3000, 512 * MI), labels={"app": "big"})]
    return _snapshot(pods, catalogs.article_flavors(), catalogs.article_overhead())


# -- The registry ---------------------------------------------------------------------------------------

SIZES = (1000, 5000, 20000)

_ARTICLE = (
    Workload("article-8x1cpu", "article", 8, article_inflate, "article experiment 1: 8 x 1 CPU pods"),
    Workload("article-3cpu", "article", 1, article_big_pod, "article experiment 2: one 3 CPU pod"),
)
# family -> (description, builder of a snapshot with that many pods)
SIZED_FAMILIES: dict[str, tuple[str, Callable[[int], Snapshot]]] = {
    "mix": ("Karpenter's mix", karpenter_mix),
    "generic": ("generic pods only", partial(karpenter_mix, generic_only=True)),
    "prefs": ("preferences to relax", preferences),
    "capi": ("OVH-like CAPI catalog", capi_catalog),
    "spread": ("zone-spread Deployments, a pricey large flavor", spread_deployments),
}
FAMILIES = (*SIZED_FAMILIES, "article")


def sized(family: str, pods: int) -> list[Workload]:
    """The family's workload with ``pods`` pods (the article's two experiments have fixed sizes)."""
    if family == "article":
        return list(_ARTICLE)
    description, make = SIZED_FAMILIES[family]
    return [Workload(f"{family}-{pods}", family, pods, partial(make, pods), description)]


def all_workloads() -> list[Workload]:
    """The committed report's set: the article's experiments, then each family at its sizes."""
    plan = [
        ("mix", SIZES),
        ("generic", SIZES),
        ("prefs", (4000,)),
        ("capi", (200, 1000, 5000)),
        ("spread", (1000,)),
    ]
    return [*_ARTICLE, *(w for family, sizes in plan for n in sizes for w in sized(family, n))]


WORKLOADS: dict[str, Workload] = {w.name: w for w in all_workloads()}
