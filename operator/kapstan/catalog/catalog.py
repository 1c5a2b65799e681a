"""The flavor catalog: every managed MD and worker pool reduced to instance types with offerings.

Capacity comes from the scale-from-zero annotations, else the infrastructure template (`status.capacity`,
or the size fields of providers like vSphere); an MD that has neither is an error, because kapstan
could only guess. Sources that carry the same flavor name are one instance type with one offering per
(zone, capacity type), each offering backed by its own source: that is how CAPI users spread a flavor
across failure domains.

Zone: the `topology.kubernetes.io/zone` capacity label, else the source's failure domain, else
`DEFAULT_ZONE`, so that an offering always has a zone even when nothing says where nodes will land.
Price: `kapstan.io/price-per-hour` on the source, else the NodeClass's price table, else a relative cost
(vCPU + memory GiB / 4 + 8 x GPUs) so that, with no prices at all, the smallest sufficient flavor wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from kapstan.api.errors import ManifestError
from kapstan.api.manifests import Manifests
from kapstan.api.quantity import format_quantity
from kapstan.api.wellknown import CAPACITY_CPU_ANNOTATION, CAPACITY_MEMORY_ANNOTATION, UNREGISTERED_TAINT_KEY
from kapstan.catalog import contract
from kapstan.catalog.annotations import ScaleFromZero, read_annotations
from kapstan.catalog.nodeclass import NodeClassSettings
from kapstan.catalog.sources import Candidate, FlavorSource, candidates
from kapstan.scheduling.model import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    MEMORY,
    OS,
    PODS,
    ZONE,
    InstanceType,
    Offering,
    Taint,
)

DEFAULT_ZONE = "default"
DEFAULT_CAPACITY_TYPE = "on-demand"
DEFAULT_MAX_PODS = 110
"""Injected into bootstrap templates so kapstan can recognise its nodes; removed at registration."""
# CAPI copies Machine labels under these domains (and their subdomains) to the Node.
_NODE_LABEL_DOMAINS = ("node-role.kubernetes.io", "node-restriction.kubernetes.io", "node.cluster.x-k8s.io")


@dataclass(frozen=True)
class FlavorOffer:
    zone: str
    capacity_type: str
    price: float | None
    """From the source's annotation; None defers to the NodeClass price table or the relative cost."""
    source: FlavorSource


@dataclass(frozen=True)
class Flavor:
    """An instance type before a NodeClass applies its reservations and prices."""

    name: str
    capacity: Mapping[str, int]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    offers: tuple[FlavorOffer, ...]
    described_by: str = field(compare=False)
    """The object that first described this flavor, for conflict messages."""


@dataclass(frozen=True)
class Catalog:
    flavors: tuple[Flavor, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(flavor.name for flavor in self.flavors)

    @property
    def sources(self) -> Mapping[tuple[str, str, str], FlavorSource]:
        """(flavor, zone, capacity type) to the MD or worker pool that provides it."""
        return {(f.name, o.zone, o.capacity_type): o.source for f in self.flavors for o in f.offers}

    def instance_types(self, settings: NodeClassSettings | None = None) -> tuple[InstanceType, ...]:
        """The solver's instance types under a NodeClass's reservations and prices."""
        settings = settings or NodeClassSettings()
        return tuple(
            InstanceType(
                name=flavor.name,
                capacity=flavor.capacity,
                allocatable=settings.allocatable(flavor.capacity),
                offerings=tuple(
                    Offering(offer.zone, offer.capacity_type, _price(flavor, offer, settings))
                    for offer in flavor.offers
                ),
                labels=flavor.labels,
                taints=flavor.taints,
            )
            for flavor in self.flavors
        )


def relative_price(capacity: Mapping[str, int]) -> float:
    """vCPU + memory GiB / 4 + 8 x GPUs: a stand-in price that grows with size."""
    gpus = sum(amount for name, amount in capacity.items() if name.endswith("/gpu"))
    cost = capacity.get("cpu", 0) / 1000 + capacity.get(MEMORY, 0) / 1000 / 2**30 / 4 + 8 * gpus / 1000
    return round(cost, 6)


def _price(flavor: Flavor, offer: FlavorOffer, settings: NodeClassSettings) -> float:
    if offer.price is not None:
        return offer.price
    return settings.prices.get(flavor.name, relative_price(flavor.capacity))


SkipSource = Callable[[FlavorSource, ManifestError], None]


def build_catalog(
    manifests: Manifests, cluster: tuple[str, str] | None = None, *, skip: SkipSource | None = None
) -> Catalog:
    """The flavors of every managed MD and worker pool (of one cluster, given as (namespace, name)).

    A source that cannot be described raises, unless ``skip`` is given: then it is told about the source
    and its error and the catalog goes on without it (the operator must not stop provisioning from every
    MD because one lacks its capacity annotations).
    """
    flavors: dict[str, Flavor] = {}
    for candidate in candidates(manifests, cluster):
        try:
            described = _describe(candidate)
            known = flavors.get(described.name)
            flavors[described.name] = _merge(known, described) if known else described
        except ManifestError as error:
            if skip is None:
                raise
            skip(candidate.source, error)
    return Catalog(tuple(flavors.values()))


def _merge(known: Flavor, new: Flavor) -> Flavor:
    offer = new.offers[0]
    for what, mine, theirs in (
        ("capacity", _readable(known.capacity), _readable(new.capacity)),
        ("labels", _readable(known.labels), _readable(new.labels)),
        ("taints", ", ".join(sorted(map(str, known.taints))), ", ".join(sorted(map(str, new.taints)))),
    ):
        if mine != theirs:
            raise ManifestError(
                new.described_by,
                "",
                f'flavor "{new.name}" has {what} "{theirs}" here but "{mine}" in {known.described_by}',
            )
    for existing in known.offers:
        if (existing.zone, existing.capacity_type) == (offer.zone, offer.capacity_type):
            raise ManifestError(
                new.described_by,
                "",
                f'flavor "{new.name}" in zone "{offer.zone}" ({offer.capacity_type}) is also provided by '
                f"{existing.source.kind} {existing.source.namespace}/{existing.source.name}: "
                "give each source its own failure domain or flavor",
            )
    return replace(known, offers=(*known.offers, offer))


def _readable(values: Mapping[str, int] | Mapping[str, str]) -> str:
    return ", ".join(
        f"{key}={format_quantity(key, value) if isinstance(value, int) else value}"
        for key, value in sorted(values.items())
    )


def _describe(candidate: Candidate) -> Flavor:
    """What one source says its flavor is."""
    try:
        sfz = read_annotations(candidate.annotations)
    except ManifestError as error:
        obj, prefix = candidate.origins[error.field[1:-1]]
        raise error.within(obj, prefix) from None
    capacity = _capacity(candidate, sfz)
    labels = _labels(candidate, sfz)
    zone = labels.pop(ZONE, "") or candidate.failure_domain or DEFAULT_ZONE
    capacity_type = labels.pop(CAPACITY_TYPE, "") or DEFAULT_CAPACITY_TYPE
    name = (
        labels.get(INSTANCE_TYPE)
        or (candidate.infra and contract.flavor_name(candidate.infra))
        or candidate.source.name
    )
    labels[INSTANCE_TYPE] = name
    join_taints = candidate.bootstrap.taints if candidate.bootstrap else []
    taints = dict.fromkeys(
        [
            *sfz.taints,
            *(Taint(t.key, t.effect, t.value) for t in join_taints if t.key != UNREGISTERED_TAINT_KEY),
        ]
    )
    offer = FlavorOffer(zone, capacity_type, sfz.price, candidate.source)
    return Flavor(name, capacity, labels, tuple(taints), (offer,), candidate.obj)


def _capacity(candidate: Candidate, sfz: ScaleFromZero) -> dict[str, int]:
    capacity = dict(sfz.capacity)
    if "cpu" not in capacity or MEMORY not in capacity:
        from_template = contract.capacity(candidate.infra) if candidate.infra else {}
        capacity = {**from_template, **capacity}
    missing = [name for name in ("cpu", MEMORY) if name not in capacity]
    if missing:
        ref = candidate.infra_ref
        template = f"{ref.kind} {candidate.source.namespace}/{ref.name}"
        raise ManifestError(
            candidate.obj,
            candidate.annotations_field,
            f"no {' or '.join(missing)} capacity for this flavor: set the annotations {CAPACITY_CPU_ANNOTATION} and {CAPACITY_MEMORY_ANNOTATION}, "
            f"or give {template} a status.capacity" + ("" if candidate.infra else " (template not found)"),
        )
    capacity.setdefault(PODS, DEFAULT_MAX_PODS * 1000)
    return capacity


def _labels(candidate: Candidate, sfz: ScaleFromZero) -> dict[str, str]:
    labels = {ARCH: "amd64", OS: "linux"}
    if candidate.infra:
        for key, path in ((ARCH, contract.STATUS_ARCH), (OS, contract.STATUS_OS)):
            value = contract.read(candidate.infra, path)
            if isinstance(value, str) and value:
                labels[key] = value
    for key, value in candidate.node_labels.items():
        domain = key.partition("/")[0] if "/" in key else ""
        if any(domain == d or domain.endswith("." + d) for d in _NODE_LABEL_DOMAINS):
            labels[key] = value
    labels.update(sfz.labels)
    return labels
