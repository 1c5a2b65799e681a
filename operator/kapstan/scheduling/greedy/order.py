"""The order the greedy pass takes pods in (twin of `rust/src/solver/greedy/order.rs`)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from kapstan.scheduling.model import CPU, MEMORY, Pod


def placement_sequence(pods: Sequence[Pod]) -> list[Pod]:
    """The order the greedy pass takes pods in, the same in both engines: the pods confined to some
    domains of a contested key first, biggest first (Karpenter's queue order), then the others interleaved
    by shape.

    A key is contested when a required pod (anti-)affinity term or a DoNotSchedule spread of the batch
    counts pods over it; a pod is confined on it when its nodeSelector, or every one of its required node
    terms, names the values it may take (In). Such a pod has nowhere else to go, while the others can
    yield: taken in shape order, a smaller unconfined pod can take the one zone a bigger confined pod needed
    (an anti-affine pod placed between zone-pinned ones) and strand it, where Karpenter's biggest first
    happens to place the pinned ones first. Only those pods leave the interleave: taking the whole batch
    biggest first made the bench's mix-1000 and mix-5000 plans 9% and 13% dearer, and taking first every
    pod a required pod-topology rule binds or selects 2% and 4%; no bench workload pins pods, so none
    changes."""
    keys = contested_keys(pods)
    confined = [pod for pod in pods if keys and confined_on(pod, keys)]
    if not confined:
        return interleaved(pods)
    taken = {pod.key for pod in confined}
    return sorted(confined, key=biggest_first) + interleaved([pod for pod in pods if pod.key not in taken])


def contested_keys(pods: Sequence[Pod]) -> set[str]:
    """Topology keys over which the batch's required pod-topology rules count pods."""
    keys = {term.topology_key for pod in pods for term in (*pod.affinity, *pod.anti_affinity)}
    keys.update(c.topology_key for pod in pods for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule")
    return keys


def confined_on(pod: Pod, keys: set[str]) -> bool:
    """Whether the pod's hard node requirements name the values one of `keys` may take."""
    if any(key in keys for key in pod.node_selector):
        return True
    return bool(pod.required_terms) and any(
        all(any(r.key == key and r.operator == "In" for r in term) for term in pod.required_terms)
        for key in keys
    )


def interleaved(pods: Sequence[Pod]) -> list[Pod]:
    """Biggest first, alternating
    between CPU-heavy and memory-heavy pods so that the running totals keep the batch's own CPU to memory
    ratio. Nodes filled in that order end full in both resources. Biggest-first alone (Karpenter's order)
    fills nodes with same-shaped pods and leaves one resource idle on each; a plain shuffle mixes them by
    chance only. Sizes are shares of the batch's totals, compared in exact integers; a batch that requests
    no CPU (or no memory) is sized by the other of the two alone, and one that requests neither by its
    other resources, largest first in name order (else every size would be 0 and hashes would decide)."""
    cpu = sum(p.requests.get(CPU, 0) for p in pods)
    memory = sum(p.requests.get(MEMORY, 0) for p in pods)
    others = [] if cpu or memory else sorted({name for p in pods for name in p.requests} - {CPU, MEMORY})

    def size(pod: Pod) -> tuple[int, tuple[int, ...], int, str]:
        pod_cpu, pod_memory = pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)
        # Without one of the two in the batch, every pod's share of it is 0: the other alone sizes it.
        share = pod_cpu * memory + pod_memory * cpu if cpu and memory else pod_cpu + pod_memory
        rest = tuple(-pod.requests.get(name, 0) for name in others)
        return (-share, rest, zlib.crc32(pod.key.encode()), pod.key)

    cpu_heavy: list[Pod] = []
    memory_heavy: list[Pod] = []
    for pod in pods:
        heavy = pod.requests.get(CPU, 0) * memory >= pod.requests.get(MEMORY, 0) * cpu
        (cpu_heavy if heavy else memory_heavy).append(pod)
    cpu_heavy.sort(key=size)
    memory_heavy.sort(key=size)
    out: list[Pod] = []
    taken_cpu = taken_memory = 0
    i = j = 0
    while i < len(cpu_heavy) or j < len(memory_heavy):
        ahead_in_cpu = taken_cpu * memory > taken_memory * cpu
        if j < len(memory_heavy) and (i == len(cpu_heavy) or ahead_in_cpu):
            pod = memory_heavy[j]
            j += 1
        else:
            pod = cpu_heavy[i]
            i += 1
        out.append(pod)
        taken_cpu += pod.requests.get(CPU, 0)
        taken_memory += pod.requests.get(MEMORY, 0)
    return out


def slot_paced(pods: Sequence[Pod]) -> list[Pod]:
    """`interleaved`, with its smallest pods (its tail) drawn in whenever the count of pods taken falls
    behind its share of the CPU taken, so that first fit hands each claim its share of the pod slots.
    Interleaved alone leaves the small pods to the end, where the last claims fill their 110 slots long
    before their CPU and memory (capi-5000's memory-rich part: claims at 56-89% of their CPU). Compared
    in exact integers."""
    base = interleaved(pods)
    cpu = sum(p.requests.get(CPU, 0) for p in base)
    out: list[Pod] = []
    taken_cpu = 0
    first, last = 0, len(base) - 1
    while first <= last:
        if len(out) * cpu < taken_cpu * len(base):
            pod, last = base[last], last - 1
        else:
            pod, first = base[first], first + 1
        out.append(pod)
        taken_cpu += pod.requests.get(CPU, 0)
    return out


def biggest_first(pod: Pod) -> tuple[int, int, str]:
    """Cpu, then memory, descending: first-fit decreasing, for re-packing into fixed-size flavors."""
    return (-pod.requests.get(CPU, 0), -pod.requests.get(MEMORY, 0), pod.key)
