"""Where a pod can go: an existing node, or a NodeClaim being planned (a `Claim`) inside a NodePool.

A claim keeps the flavors that could still hold everything placed on it, cheapest first; its price is
that of its cheapest remaining flavor. Requirements only narrow as pods join, so flavors only drop out.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    HOSTNAME,
    NODEPOOL,
    ZONE,
    DaemonSet,
    HostPort,
    InstanceType,
    Node,
    NodePool,
    Offering,
    Pod,
    Taint,
)
from kapstan.scheduling.topology import matches_node, untolerated

OFFERING_KEYS = (ZONE, CAPACITY_TYPE)


@dataclass
class Flavor:
    """One instance type as one NodePool sees it: allocatable minus that pool's DaemonSet overhead."""

    it: InstanceType
    net: dict[str, int]
    overhead: dict[str, int]
    pool_keys: frozenset[str] = frozenset()
    """Label keys the NodePool gives every node of its own (`pool_label_keys`), whatever the flavor."""
    daemon_ports: tuple[HostPort, ...] = ()
    """Host ports the DaemonSets running on this flavor's nodes hold."""

    @property
    def name(self) -> str:
        return self.it.name

    def ports_free(self, pod: Pod) -> bool:
        """Whether none of the pod's host ports is held by a DaemonSet on this flavor's nodes."""
        if not self.daemon_ports:  # the common case, on the hot path of every placement
            return True
        return not any(a.conflicts(b) for a in pod.host_ports for b in self.daemon_ports)

    def offerings(self, requirements: reqs.Requirements) -> list[Offering]:
        zone = requirements.get(ZONE)
        capacity_type = requirements.get(CAPACITY_TYPE)
        return [
            o
            for o in self.it.offerings
            if o.available
            and (zone is None or zone.has(o.zone))
            and (capacity_type is None or capacity_type.has(o.capacity_type))
        ]

    def price(self, requirements: reqs.Requirements) -> float:
        prices = [o.price for o in self.offerings(requirements)]
        return min(prices) if prices else float("inf")

    def cheapest_offering(self, requirements: reqs.Requirements) -> Offering:
        return min(self.offerings(requirements), key=lambda o: (o.price, o.zone, o.capacity_type))

    def compatible(self, requirements: reqs.Requirements) -> bool:
        """Whether a node of this flavor can meet the requirements: on the labels the flavor defines, and,
        for a key that neither the flavor nor its NodePool gives the node, only if absence is allowed."""
        for req in requirements.values():
            if req.key in OFFERING_KEYS:
                continue
            value = self.it.labels.get(req.key)
            if value is not None:
                if not req.has(value):
                    return False
            elif not req.absent_ok and req.key not in self.pool_keys:
                return False
        if ZONE in requirements or CAPACITY_TYPE in requirements:
            return bool(self.offerings(requirements))
        return True

    def label(self, key: str, requirements: reqs.Requirements) -> list[str]:
        """Values this flavor can give the label `key` under the requirements."""
        if key in OFFERING_KEYS:
            index = OFFERING_KEYS.index(key)
            return sorted({(o.zone, o.capacity_type)[index] for o in self.offerings(requirements)})
        value = self.it.labels.get(key)
        return [] if value is None else [value]


def pool_label_keys(pool: NodePool, flavor_label_keys: Set[str]) -> frozenset[str]:
    """The label keys a NodePool gives its nodes whatever their flavor: its template labels, its own
    name, and every key of its requirements that no flavor defines (a label some flavor carries is that
    flavor's: a flavor without it has none). The node's value of such a requirement-only key is
    `requirements.carried_value`."""
    required = {req.key for req in pool.requirements} - flavor_label_keys - {HOSTNAME, *OFFERING_KEYS}
    return frozenset({*pool.labels, NODEPOOL, *required})


def daemonsets_on(
    daemonsets: tuple[DaemonSet, ...], labels: Mapping[str, str], taints: tuple[Taint, ...] | list[Taint]
) -> list[DaemonSet]:
    """The DaemonSets whose pod a node with these labels and taints would run."""
    return [
        ds
        for ds in daemonsets
        if matches_node(ds.pod, labels) and untolerated(ds.pod.tolerations, taints, prefer=False) is None
    ]


@dataclass
class PoolView:
    pool: NodePool
    base: dict[str, reqs.Requirement]
    flavors: list[Flavor]
    """Flavors whose labels meet the pool's requirements, cheapest first."""
    remaining: dict[str, int]
    """Limits left for this solve (only limited resources; `nodes` counts claims)."""
    crowded: list[str] = field(default_factory=list)
    """Flavors left out because the DaemonSets that run on them do not fit (Karpenter filters them)."""

    @staticmethod
    def build(
        pool: NodePool, catalog: Mapping[str, InstanceType], daemonsets: tuple[DaemonSet, ...]
    ) -> PoolView:
        base = reqs.build(pool.requirements, {**pool.labels, NODEPOOL: pool.name})
        names = pool.instance_types if pool.instance_types is not None else tuple(sorted(catalog))
        pool_keys = pool_label_keys(pool, {key for it in catalog.values() for key in it.labels})
        carried = {key: reqs.carried_value(base[key]) for key in sorted(pool_keys) if key in base}
        flavors: list[Flavor] = []
        crowded: list[str] = []
        for name in names:
            it = catalog.get(name)
            if it is None:
                continue
            labels = {
                **{key: value for key, value in carried.items() if value is not None},
                **it.labels,
                **pool.labels,
                NODEPOOL: pool.name,
            }
            on_sale = [o for o in it.offerings if o.available]
            if on_sale:
                cheapest = min(on_sale, key=lambda o: (o.price, o.zone))
                labels.update({ZONE: cheapest.zone, CAPACITY_TYPE: cheapest.capacity_type})
            running = daemonsets_on(daemonsets, labels, [*pool.taints, *it.taints])
            overhead = res.total(ds.pod.requests for ds in running)
            ports = tuple(port for ds in running for port in ds.pod.host_ports)
            flavor = Flavor(it, res.subtract(it.allocatable, overhead), overhead, pool_keys, ports)
            # A flavor with no available offering the pool allows can never be bought: no candidate
            # (requirements only narrow, so every claim's flavors keep an offering).
            if not flavor.compatible(base) or not flavor.offerings(base):
                continue
            if res.fits({}, overhead, it.allocatable):
                flavors.append(flavor)
            else:
                crowded.append(it.name)
        flavors.sort(key=lambda f: (f.price(base), f.name))
        remaining = {key: limit - pool.usage.get(key, 0) for key, limit in pool.limits.items()}
        return PoolView(pool, base, flavors, remaining, crowded)

    def within_limits(self, flavor: Flavor, replacing: Flavor | None) -> bool:
        for key, left in self.remaining.items():
            if key == "nodes":
                need = 0 if replacing is not None else 1000
            else:
                need = flavor.it.capacity.get(key, 0) - (
                    replacing.it.capacity.get(key, 0) if replacing else 0
                )
            if need > left:
                return False
        return True

    def charge(self, flavor: Flavor | None, replacing: Flavor | None) -> None:
        """Move this pool's limit accounting from `replacing` to `flavor` (either may be None)."""
        for key in self.remaining:
            if key == "nodes":
                delta = (1000 if flavor else 0) - (1000 if replacing else 0)
            else:
                delta = (flavor.it.capacity.get(key, 0) if flavor else 0) - (
                    replacing.it.capacity.get(key, 0) if replacing else 0
                )
            self.remaining[key] -= delta


@dataclass
class ExistingTarget:
    node: Node
    used: dict[str, int]
    ports: list[HostPort]
    placed: list[str] = field(default_factory=list)

    @staticmethod
    def build(node: Node, daemonsets: tuple[DaemonSet, ...]) -> ExistingTarget:
        """The node with its pods; the DaemonSets that run on it hold their host ports there even when
        their pods are not in the snapshot (a second copy of a port held twice changes nothing)."""
        used = res.total(p.requests for p in node.pods)
        ports = [port for p in node.pods for port in p.host_ports]
        ports += [
            port for ds in daemonsets_on(daemonsets, node.labels, node.taints) for port in ds.pod.host_ports
        ]
        return ExistingTarget(node, used, ports)

    def domain(self, key: str) -> str | None:
        return self.node.labels.get(key)


@dataclass(eq=False)  # a claim is itself: compared by identity
class Claim:
    index: int
    view: PoolView
    requirements: dict[str, reqs.Requirement]
    flavors: list[Flavor]
    used: dict[str, int] = field(default_factory=dict)
    pods: list[Pod] = field(default_factory=list)
    ports: list[HostPort] = field(default_factory=list)
    hostname: str = ""
    max_net: dict[str, int] = field(default_factory=dict)
    """Per resource, the most any flavor offered when the claim opened: flavors only drop out, so this
    stays an upper bound, a cheap way to turn pods away."""

    def __post_init__(self) -> None:
        # A slash keeps it from ever equalling a real node name.
        self.hostname = f"{self.view.pool.name}/claim-{self.index}"
        self.max_net = res.maximum(f.net for f in self.flavors)

    @property
    def chosen(self) -> Flavor:
        return self.flavors[0]

    @property
    def price(self) -> float:
        return self.chosen.price(self.requirements)

    @property
    def taints(self) -> tuple[Taint, ...]:
        """The taints the claim's node will carry: its pool template's and its flavor's own."""
        return (*self.view.pool.taints, *self.chosen.it.taints)

    def domain_options(
        self, key: str, flavors: list[Flavor], requirements: reqs.Requirements
    ) -> list[str | None]:
        """Values the label `key` could still take on this claim's node, given candidate flavors."""
        if key == HOSTNAME:
            return [self.hostname]
        req = requirements.get(key)
        pinned = req.single_value() if req else None
        if pinned is not None:
            return [pinned]
        if key in OFFERING_KEYS or any(key in f.it.labels for f in flavors):
            values = {v for f in flavors for v in f.label(key, requirements) if req is None or req.has(v)}
            return [*sorted(values)]
        if req is not None and not req.complement and (req.values or not req.absent_ok):
            return [*sorted(req.values)]
        # A key only the pool's requirements define (Exists, Gt, ...) is given carried_value on the node:
        # that is its one domain now, so a pod counted there is counted as the node will be labelled, and
        # a later pod cannot narrow the key under the pods already counted without it.
        return [reqs.carried_value(req) if req is not None else None]

    def domain(self, key: str) -> str | None:
        options = self.domain_options(key, self.flavors, self.requirements)
        return options[0] if len(options) == 1 else None
