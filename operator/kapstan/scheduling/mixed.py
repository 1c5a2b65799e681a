"""The mixed-flavor move of the cost pass: several claims re-packed into a cheaper mix of two flavors.

Single, pair and zone moves hold their new claims to one flavor at a time, so pods whose CPU to memory
ratio lies between two flavors' (a general-purpose one at 4 GB per vCPU, a CPU-optimised one at 2) end on
the one flavor that holds them best and leave the other resource idle: the covering LP buys the two
together. This move does what the LP does on the pods of up to `MIX_GROUP` claims of one NodePool: of the
pool's untainted flavors it takes the pair whose fluid mix covers the pods' totals cheapest, splits the pods
by their memory per CPU (the most CPU-heavy ones for the CPU-rich flavor, as many as makes the fluid cost
of the two parts least) and hands each part to the flavors no bigger than its flavor, so that the last
claim of each part shrinks to what it holds. It is tried only when that fluid mix saves at least
`MIX_GAIN` of the best single flavor's fluid cost: on a catalog whose flavors share one shape (Karpenter's
benchmark, the spread workloads) no pair does, and the move spends nothing.

The whole-node count of a split is only an estimate of what first fit then packs, and it is flat over
long runs of split points: of capi-200's, the estimate's best packs into 7.16/h and the next size of the
CPU-rich part (one more of its nodes, counted in every resource, pod slots included) into 7.12/h. So the
move offers the best split of each size of the CPU-rich part, the `MIX_TRIES` cheapest by the estimate,
and the cost pass places them all and keeps the cheapest.

The arithmetic is the Rust twin's (`improve/mixed.rs`) step by step: integer totals, each quotient taken
as float(a) / float(b), so that both engines choose the same pair and the same split.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from kapstan.scheduling.greedy import biggest_first
from kapstan.scheduling.model import CPU, MEMORY, Pod
from kapstan.scheduling.targets import Claim, Flavor

MIX_GROUP = 64
MIX_GAIN = 0.01
MIX_TRIES = 2
SAVING = 1e-9


@dataclass(frozen=True)
class MixedSplit:
    """The pods of a move in two parts, each with the flavors its new claims may take."""

    cpu_rich: list[Pod]
    cpu_rich_flavors: frozenset[str]
    rest: list[Pod]
    rest_flavors: frozenset[str]

    def parts(self) -> tuple[tuple[list[Pod], frozenset[str]], ...]:
        """The two parts in the order they are placed, each with its flavors."""
        return ((self.cpu_rich, self.cpu_rich_flavors), (self.rest, self.rest_flavors))


def mixed_groups(claims: list[Claim]) -> Iterator[tuple[Claim, ...]]:
    """The claims of one NodePool on untainted flavors, `MIX_GROUP` at a time in index order."""
    by_pool: dict[str, list[Claim]] = {}
    for claim in claims:
        if not claim.chosen.it.taints:
            by_pool.setdefault(claim.view.pool.name, []).append(claim)
    for name in sorted(by_pool):
        members = sorted(by_pool[name], key=lambda c: c.index)
        for start in range(0, len(members), MIX_GROUP):
            yield tuple(members[start : start + MIX_GROUP])


def splits(claims: tuple[Claim, ...], pods: list[Pod]) -> list[MixedSplit]:
    """The move's ways of splitting the pods in two, cheapest first by the whole-node estimate: for each
    count of the CPU-rich flavor's nodes its part fills, the split point that costs least, those that cost
    less than the claims, `MIX_TRIES` at most; none when no pair of flavors saves `MIX_GAIN` over the
    best single one on the pods' CPU and memory."""
    view = claims[0].view
    flavors = [
        f for f in view.flavors if not f.it.taints and f.net.get(CPU, 0) > 0 and f.net.get(MEMORY, 0) > 0
    ]
    if not flavors:
        return []
    prices = {f.name: f.price(view.base) for f in flavors}
    shape = [sum(p.requests.get(CPU, 0) for p in pods), sum(p.requests.get(MEMORY, 0) for p in pods)]
    # Covering the shape with fractions of one flavor's nodes (finite: each holds CPU and memory).
    single = min(prices[f.name] * _nodes(f, [CPU, MEMORY], shape) for f in flavors)
    # No mix costs less than each resource bought alone at its cheapest price per unit: when even that
    # saves too little, the pairs (a square of a large catalog's flavors) are not worth looking at.
    per_cpu = min(prices[f.name] / float(f.net[CPU]) for f in flavors)
    per_memory = min(prices[f.name] / float(f.net[MEMORY]) for f in flavors)
    alone = max(float(shape[0]) * per_cpu, float(shape[1]) * per_memory)
    if alone >= single * (1.0 - MIX_GAIN):
        return []
    pair = _cheapest_pair(flavors, prices, shape[0], shape[1])
    if pair is None or pair[0] >= single * (1.0 - MIX_GAIN):
        return []
    _, rich, lean = pair
    rich_family, lean_family = _within(flavors, rich), _within(flavors, lean)
    keys = sorted({k for p in pods for k, v in p.requests.items() if v > 0})
    totals = [sum(p.requests.get(k, 0) for p in pods) for k in keys]
    # Most CPU per byte first: the CPU-rich flavor's part is a prefix of this order.
    order = sorted(pods, key=lambda p: (_memory_per_cpu(p), biggest_first(p)))
    # Per count of the CPU-rich flavor's nodes the prefix fills, the cheapest split point (the first
    # on a tie).
    best: dict[int, tuple[float, int]] = {}
    taken = [0] * len(keys)
    for at in range(len(order) + 1):
        if at:
            for i, k in enumerate(keys):
                taken[i] += order[at - 1].requests.get(k, 0)
        left = [t - s for t, s in zip(totals, taken, strict=True)]
        cost = _nodes_cost(rich, rich_family, prices, keys, taken) + _nodes_cost(
            lean, lean_family, prices, keys, left
        )
        if math.isinf(cost):
            continue  # a part some flavor of its pair lacks a resource for: never cheaper
        size = math.ceil(_nodes(rich, keys, taken))
        if size not in best or cost < best[size][0]:
            best[size] = (cost, at)
    before = sum(c.price for c in claims) - SAVING
    chosen = sorted(found for found in best.values() if found[0] < before)[:MIX_TRIES]
    rich_names = frozenset(f.name for f in rich_family)
    lean_names = frozenset(f.name for f in lean_family)
    return [MixedSplit(order[:at], rich_names, order[at:], lean_names) for _, at in chosen]


def _memory_per_cpu(pod: Pod) -> float:
    cpu = pod.requests.get(CPU, 0)
    return float(pod.requests.get(MEMORY, 0)) / float(cpu) if cpu > 0 else math.inf


def _cheapest_pair(
    flavors: list[Flavor], prices: dict[str, float], cpu: int, memory: int
) -> tuple[float, Flavor, Flavor] | None:
    """The fluid cost and the (CPU-rich, memory-rich) pair whose mix covers the CPU and memory exactly
    and cheapest, first in the pool's order on a tie; None when their ratio lies outside every pair's."""
    best: tuple[float, Flavor, Flavor] | None = None
    for rich in flavors:
        for lean in flavors:
            rc, rm, lc, lm = rich.net[CPU], rich.net[MEMORY], lean.net[CPU], lean.net[MEMORY]
            det = rc * lm - lc * rm
            if det <= 0:
                continue  # `rich` must hold strictly more CPU per byte than `lean`
            # Nodes of each for which the two cover the CPU and the memory exactly: both positive
            # only when the pods' memory per CPU lies strictly between the two flavors'.
            of_rich = cpu * lm - lc * memory
            of_lean = rc * memory - rm * cpu
            if of_rich <= 0 or of_lean <= 0:
                continue
            cost = prices[rich.name] * (float(of_rich) / float(det)) + prices[lean.name] * (
                float(of_lean) / float(det)
            )
            if best is None or cost < best[0]:
                best = (cost, rich, lean)
    return best


def _within(flavors: list[Flavor], top: Flavor) -> list[Flavor]:
    """The flavors no bigger than `top` in any resource, in the pool's order (cheapest first): what a
    part's claims may shrink to."""
    return [
        f for f in flavors if all(f.net.get(k, 0) <= top.net.get(k, 0) for k in f.net.keys() | top.net.keys())
    ]


def _nodes(top: Flavor, keys: list[str], amounts: list[int]) -> float:
    """How many of `top`'s nodes the amounts fill, fractions counted, in the resource they fill most
    (infinite when it lacks one of them)."""
    nodes = 0.0
    for key, amount in zip(keys, amounts, strict=True):
        if amount <= 0:
            continue
        net = top.net.get(key, 0)
        if net <= 0:
            return math.inf
        nodes = max(nodes, float(amount) / float(net))
    return nodes


def _nodes_cost(
    top: Flavor, family: list[Flavor], prices: dict[str, float], keys: list[str], amounts: list[int]
) -> float:
    """What the amounts cost as whole nodes: as many full nodes of `top` as they fill, and the cheapest
    flavor of the family that holds what is left over (its last claim shrinks to it)."""
    nodes = _nodes(top, keys, amounts)
    if math.isinf(nodes):
        return math.inf
    full = math.floor(nodes)
    left = [amount - full * top.net.get(key, 0) for key, amount in zip(keys, amounts, strict=True)]
    if all(v <= 0 for v in left):
        return full * prices[top.name]
    tail = next(
        (
            prices[f.name]
            for f in family
            if f.name in prices and all(v <= f.net.get(k, 0) for k, v in zip(keys, left, strict=True))
        ),
        prices[top.name],
    )
    return full * prices[top.name] + tail
