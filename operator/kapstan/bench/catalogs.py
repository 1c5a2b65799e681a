"""Flavor catalogs the workloads run against: Karpenter's fake 400-flavor catalog, an OVH-like CAPI
catalog with real-looking prices, and the article's three c3 flavors.

Resources are milli-units as in the scheduling model (1 CPU = 1000, 1 byte = 1000, 1 pod = 1000).
"""

from __future__ import annotations

from kapstan.scheduling.model import (
    ARCH,
    CPU,
    INSTANCE_TYPE,
    MEMORY,
    OS,
    PODS,
    DaemonSet,
    InstanceType,
    NodeSelectorRequirement,
    Offering,
    Pod,
    Taint,
    Toleration,
)

GI = 1 << 30
MI = 1 << 20
GB = 10**9
GPU = "nvidia.com/gpu"
GPU_LABEL = "nvidia.com/gpu.present"
GPU_TAINT = Taint(GPU, "NoSchedule", "present")
KARPENTER_ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
OVH_ZONES = ("eu-west-par-a", "eu-west-par-b", "eu-west-par-c")


def flavor(
    name: str,
    cpus: float,
    memory_bytes: int,
    price: float,
    zones: tuple[str, ...],
    max_pods: int = 110,
    gpus: int = 0,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
) -> InstanceType:
    capacity = {CPU: round(cpus * 1000), MEMORY: memory_bytes * 1000, PODS: max_pods * 1000}
    if gpus:
        capacity[GPU] = gpus * 1000
    offerings = tuple(Offering(zone=z, price=price) for z in zones)
    all_labels = {INSTANCE_TYPE: name, ARCH: "amd64", OS: "linux", **(labels or {})}
    return InstanceType(name, capacity, dict(capacity), offerings, all_labels, taints)


def requests(cpu_milli: int, memory_bytes: int, gpus: int = 0) -> dict[str, int]:
    out = {CPU: cpu_milli, MEMORY: memory_bytes * 1000, PODS: 1000}
    if gpus:
        out[GPU] = gpus * 1000
    return out


def overhead(name: str, cpu_milli: int, memory_bytes: int, **fields: object) -> DaemonSet:
    """A DaemonSet that runs on every node it admits; it costs its requests (no pod slot: it models
    kube-reserved overhead as much as agents)."""
    resources = {CPU: cpu_milli, MEMORY: memory_bytes * 1000}
    return DaemonSet(name, Pod("kube-system", f"{name}-template", resources, **fields))  # type: ignore[arg-type]


# -- Karpenter's fake catalog ---------------------------------------------------------------------------


def karpenter_flavors(count: int = 400) -> tuple[InstanceType, ...]:
    """`fake.InstanceTypes(count)`: flavor i has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, priced 0.1 per vCPU
    plus 0.1 per GiB, one on-demand offering in each of three zones."""
    out = []
    for i in range(count):
        n = i + 1
        out.append(flavor(f"fake-it-{i}", n, 2 * n * GI, 0.1 * n + 0.1 * 2 * n, KARPENTER_ZONES, 10 * n))
    return tuple(out)


def karpenter_overhead() -> tuple[DaemonSet, ...]:
    """Karpenter's fake per-node overhead (100m CPU, 10Mi), as a DaemonSet that runs everywhere."""
    return (overhead("kube-reserved", 100, 10 * MI, tolerations=(Toleration(operator="Exists"),)),)


# -- An OVH-like CAPI catalog ---------------------------------------------------------------------------

# name, vCPU, memory GB, EUR per hour, GPUs. Close to OVHcloud Public Cloud list prices (b3 general
# purpose, c3 CPU-optimised, r3 memory-optimised, l4 GPU); exact figures do not matter, ratios do.
OVH_FLAVORS: tuple[tuple[str, int, int, float, int], ...] = (
    ("b3-8", 2, 8, 0.0508, 0),
    ("b3-16", 4, 16, 0.1016, 0),
    ("b3-32", 8, 32, 0.2032, 0),
    ("b3-64", 16, 64, 0.4064, 0),
    ("b3-128", 32, 128, 0.8128, 0),
    ("b3-256", 64, 256, 1.6256, 0),
    ("c3-4", 2, 4, 0.0459, 0),
    ("c3-8", 4, 8, 0.0918, 0),
    ("c3-16", 8, 16, 0.1836, 0),
    ("c3-32", 16, 32, 0.3672, 0),
    ("c3-64", 32, 64, 0.7344, 0),
    ("r3-16", 2, 16, 0.0855, 0),
    ("r3-32", 4, 32, 0.1710, 0),
    ("r3-64", 8, 64, 0.3420, 0),
    ("r3-128", 16, 128, 0.6840, 0),
    ("l4-90", 22, 90, 1.0000, 1),
)


def capi_flavors() -> tuple[InstanceType, ...]:
    out = []
    for name, cpus, mem_gb, price, gpus in OVH_FLAVORS:
        extra = {GPU_LABEL: "true"} if gpus else {}
        taints = (GPU_TAINT,) if gpus else ()
        out.append(flavor(name, cpus, mem_gb * GB, price, OVH_ZONES, 110, gpus, extra, taints))
    return tuple(out)


def capi_overhead() -> tuple[DaemonSet, ...]:
    """A CNI agent and a node exporter everywhere, the NVIDIA device plugin on GPU nodes only."""
    everywhere = (Toleration(operator="Exists"),)
    on_gpu = ((NodeSelectorRequirement(GPU_LABEL, "In", ("true",)),),)
    return (
        overhead("cni", 150, 150 * MI, tolerations=everywhere),
        overhead("node-exporter", 50, 64 * MI, tolerations=everywhere),
        overhead("nvidia-device-plugin", 50, 128 * MI, tolerations=everywhere, required_terms=on_gpu),
    )


# -- A catalog with a pricey large flavor ----------------------------------------------------------------

# name, vCPU, memory GB, EUR per hour: the OVH-like general-purpose b3 flavors up to 16 vCPU, and one
# large flavor priced as bare metal is (about 2.5 times the b3 price per vCPU), which a claim that grows
# past 16 vCPU turns into.
PRICEY_LARGE_FLAVORS: tuple[tuple[str, int, int, float], ...] = (
    ("b3-8", 2, 8, 0.0508),
    ("b3-16", 4, 16, 0.1016),
    ("b3-32", 8, 32, 0.2032),
    ("b3-64", 16, 64, 0.4064),
    ("metal-96", 48, 192, 3.0),
)


def pricey_large_flavors() -> tuple[InstanceType, ...]:
    return tuple(flavor(n, c, g * GB, p, OVH_ZONES) for n, c, g, p in PRICEY_LARGE_FLAVORS)


# -- The article ----------------------------------------------------------------------------------------


def article_flavors() -> tuple[InstanceType, ...]:
    """c3-4, c3-8, c3-16 in zone `nova`, priced by kapstan's relative formula vCPU + GiB / 4."""
    sizes = (("c3-4", 2, 4), ("c3-8", 4, 8), ("c3-16", 8, 16))
    return tuple(flavor(n, c, g * GB, c + g * GB / GI / 4, ("nova",)) for n, c, g in sizes)


def article_overhead() -> tuple[DaemonSet, ...]:
    return (overhead("node-agent", 100, 128 * MI, tolerations=(Toleration(operator="Exists"),)),)
