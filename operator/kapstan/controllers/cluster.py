"""One typed picture of the nodes kapstan knows, after Karpenter's ``pkg/controllers/state``.

A ``StateNode`` pairs a NodeClaim with its Node (by ``status.nodeName``, else by providerID), the Machines
claimed for it (as the CAPI provider reports them, ``CloudProvider.claimed_by``), its NodePool, the
pods bound to the Node and, when a catalog is given, the offering source (MD or worker class) it came
from. A Node that no claim owns is a ``StateNode`` too, without a claim, paired with its Machines by
providerID: adoption and the snapshot need those.

Everything is read from ``ClusterState``'s informers and their indexes, and Machines from the provider
(which answers from the management informers: docs/architecture.md#one-seam-to-capi), in this one module,
so the controllers stop navigating raw objects and the pairing rules live once. ``Cluster.nodes()`` keeps the
whole view until one of the stores it is built from changes (each store counts its changes, as in
``memo``); ``Cluster.of_claim`` and ``Cluster.of_node`` build one entry from the indexes, for controllers
that reconcile one object and must not rebuild the view at every step.

The raw objects stay on the entry (``claim``, ``node``): writes need their resourceVersion and Events
their identity. Machines are the provider's typed ``LaunchedMachine``: only ``capi/`` reads CAPI objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kapstan.api.wellknown import (
    CAPACITY_TYPE,
    INITIALIZED,
    INSTANCE_TYPE,
    LAUNCHED,
    NODEPOOL,
    PRICE_ANNOTATION,
    REGISTERED,
    ZONE,
)
from kapstan.capi.provider import CloudProvider, LaunchedMachine
from kapstan.catalog import Catalog, FlavorSource
from kapstan.controllers import conditions as cond
from kapstan.controllers.indexes import BY_NODEPOOL, NODE_NAME, PROVIDER_ID
from kapstan.kube.client import Object
from kapstan.kube.meta import EMPTY, Meta

if TYPE_CHECKING:  # ClusterState builds its one Cluster; this module reads its stores.
    from kapstan.controllers.state import ClusterState


@dataclass(frozen=True)
class StateNode:
    """A NodeClaim with its Node, Machines and pods, or a Node that no claim owns."""

    claim: Object | None
    node: Object | None
    machines: tuple[LaunchedMachine, ...]
    """The claim's Machines, or for a Node no claim owns the Machines with its providerID."""
    pods: tuple[Object, ...]
    """The pods bound to the Node (``spec.nodeName``), whatever their phase."""
    claim_meta: Meta | None
    node_meta: Meta | None
    source: FlavorSource | None = None
    """The MD or worker class offering the claim's flavor in its zone; None without a catalog."""

    @property
    def name(self) -> str:
        """The claim's name, or the Node's for a Node without one."""
        meta = self.claim_meta or self.node_meta
        return meta.name if meta else ""

    @property
    def node_name(self) -> str:
        if self.node_meta is not None:
            return self.node_meta.name
        return self.recorded_node_name

    @property
    def recorded_node_name(self) -> str:
        """The Node name the claim's status records (set at registration), whether that Node exists or not."""
        return str((self.claim or {}).get("status", {}).get("nodeName") or "")

    @property
    def provider_id(self) -> str:
        from_claim = (self.claim or {}).get("status", {}).get("providerID")
        return str(from_claim or (self.node or {}).get("spec", {}).get("providerID") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        """The claim's labels (what kapstan asked for), else the Node's."""
        meta = self.claim_meta or self.node_meta
        return meta.labels if meta else EMPTY

    @property
    def pool(self) -> str:
        return self.labels.get(NODEPOOL, "")

    @property
    def offering(self) -> tuple[str, str, str]:
        """(flavor, zone, capacity type) as the claim's labels name them."""
        labels = self.labels
        return (labels.get(INSTANCE_TYPE, ""), labels.get(ZONE, ""), labels.get(CAPACITY_TYPE, ""))

    @property
    def price(self) -> float | None:
        """What the claim's node was bought at per hour (its price annotation), if it says."""
        text = self.claim_meta.annotations.get(PRICE_ANNOTATION, "") if self.claim_meta else ""
        try:
            return float(text) if text else None
        except ValueError:
            return None

    @property
    def launched(self) -> bool:
        return self.claim is not None and cond.is_true(self.claim, LAUNCHED)

    @property
    def registered(self) -> bool:
        return self.claim is not None and cond.is_true(self.claim, REGISTERED)

    @property
    def initialized(self) -> bool:
        return self.claim is not None and cond.is_true(self.claim, INITIALIZED)

    @property
    def claim_deleting(self) -> bool:
        return self.claim_meta is not None and self.claim_meta.deleting

    @property
    def node_deleting(self) -> bool:
        return self.node_meta is not None and self.node_meta.deleting

    @property
    def deleting(self) -> bool:
        """The claim or the Node is being deleted."""
        return self.claim_deleting or self.node_deleting

    @property
    def claimed_machine(self) -> bool:
        """A Machine of this node carries a claim's name (the lifecycle's, not adoption's, to handle)."""
        return any(machine.nodeclaim for machine in self.machines)


@dataclass(frozen=True)
class StateNodes:
    """The whole view, with its lookups."""

    nodes: tuple[StateNode, ...]
    _by_claim: Mapping[str, StateNode]
    _by_node: Mapping[str, StateNode]
    _by_provider_id: Mapping[str, StateNode]

    @classmethod
    def of(cls, nodes: Iterable[StateNode]) -> StateNodes:
        listed = tuple(nodes)
        return cls(
            listed,
            {n.claim_meta.name: n for n in listed if n.claim_meta is not None},
            {n.node_meta.name: n for n in listed if n.node_meta is not None},
            {n.provider_id: n for n in listed if n.provider_id},
        )

    def by_claim(self, name: str) -> StateNode | None:
        return self._by_claim.get(name)

    def by_node(self, name: str) -> StateNode | None:
        """The entry of the Node named ``name`` (None when no such Node exists)."""
        return self._by_node.get(name)

    def by_provider_id(self, provider_id: str) -> StateNode | None:
        return self._by_provider_id.get(provider_id)

    @property
    def claimed(self) -> list[StateNode]:
        """The entries with a NodeClaim."""
        return [n for n in self.nodes if n.claim is not None]


class Cluster:
    """``StateNode``s kept from ``ClusterState``'s stores and the provider's Machines (the one place that
    asks the provider for them)."""

    def __init__(self, state: ClusterState, provider: CloudProvider) -> None:
        self.state = state
        self.provider = provider
        # The catalog itself, not its id: a kept id could be a new catalog's once the old one is freed.
        self._kept: tuple[tuple[int, ...], Catalog | None, StateNodes] | None = None
        self._machine_changes = 0
        provider.on_change(self._on_machine)

    def _on_machine(self, _: LaunchedMachine) -> None:
        self._machine_changes += 1

    def _versions(self) -> tuple[int, ...]:
        informers = (self.state.node_claims, self.state.nodes, self.state.pods)
        return (*(informer.store.changes for informer in informers), self._machine_changes)

    def nodes(self, catalog: Catalog | None = None) -> StateNodes:
        """Every claim and every Node, paired; kept while the stores (and ``catalog``) stay the same."""
        versions = self._versions()
        kept = self._kept
        if kept is not None and kept[0] == versions and kept[1] is catalog:
            return kept[2]
        built = StateNodes.of(self._build_all(catalog))
        self._kept = (versions, catalog, built)
        return built

    def _build_all(self, catalog: Catalog | None) -> list[StateNode]:
        built = [self.of_claim(claim, catalog) for claim in self.state.node_claims.store.objects()]
        paired = {n.node_name for n in built if n.node is not None}
        built += [
            self._unclaimed(node) for node in self.state.nodes.store.objects() if _name(node) not in paired
        ]
        return built

    def claim(self, name: str, catalog: Catalog | None = None) -> StateNode | None:
        """The claim named ``name`` with what it is paired with, built from the indexes."""
        found = self.state.node_claims.store.get(name)
        return None if found is None else self.of_claim(found, catalog)

    def of_claim(self, claim: Object, catalog: Catalog | None = None) -> StateNode:
        meta = Meta.of(claim)
        node = self._node_of(claim)
        labels = meta.labels
        offering = (labels.get(INSTANCE_TYPE, ""), labels.get(ZONE, ""), labels.get(CAPACITY_TYPE, ""))
        return StateNode(
            claim=claim,
            node=node,
            machines=tuple(self.provider.claimed_by(meta.name)),
            pods=self._pods_on(_name(node) if node else claim.get("status", {}).get("nodeName", "")),
            claim_meta=meta,
            node_meta=Meta.of(node) if node is not None else None,
            source=catalog.sources.get(offering) if catalog is not None else None,
        )

    def in_pool(self, pool: str) -> list[StateNode]:
        """The claims of NodePool ``pool`` (by its label), deleting ones too, built from the index."""
        return [self.of_claim(claim) for claim in self.state.node_claims.store.by_index(BY_NODEPOOL, pool)]

    def of_node(self, node: Object) -> StateNode:
        """The Node's entry: with the claim that owns it, or without one."""
        claim = self._claim_of(node)
        return self.of_claim(claim) if claim is not None else self._unclaimed(node)

    def claims_with_provider_id(self, provider_id: str) -> list[str]:
        """Names of the claims whose ``status.providerID`` is ``provider_id``."""
        if not provider_id:
            return []
        return [_name(claim) for claim in self.state.node_claims.store.by_index(PROVIDER_ID, provider_id)]

    def _unclaimed(self, node: Object) -> StateNode:
        provider_id = node.get("spec", {}).get("providerID") or ""
        return StateNode(
            claim=None,
            node=node,
            machines=tuple(self.provider.with_provider_id(provider_id)),
            pods=self._pods_on(_name(node)),
            claim_meta=None,
            node_meta=Meta.of(node),
        )

    def _node_of(self, claim: Object) -> Object | None:
        """The claim's Node: by ``status.nodeName``, else by its providerID."""
        status = claim.get("status", {})
        node = self.state.nodes.store.get(status["nodeName"]) if status.get("nodeName") else None
        if node is None and status.get("providerID"):
            found = self.state.nodes.store.by_index(PROVIDER_ID, status["providerID"])
            node = found[0] if found else None
        return node

    def _claim_of(self, node: Object) -> Object | None:
        provider_id = node.get("spec", {}).get("providerID") or ""
        by_provider = self.state.node_claims.store.by_index(PROVIDER_ID, provider_id) if provider_id else []
        if by_provider:
            return by_provider[0]
        by_name = self.state.node_claims.store.by_index(NODE_NAME, _name(node))
        return by_name[0] if by_name else None

    def _pods_on(self, node_name: str) -> tuple[Object, ...]:
        return tuple(self.state.pods.store.by_index(NODE_NAME, node_name)) if node_name else ()


def _name(obj: Object) -> str:
    return str(obj["metadata"]["name"])
