"""NodePool and ClusterAPINodeClass status: what ``kubectl get nodepools`` and ``describe`` show.

A NodePool's status says how much it holds (``status.resources``: the summed capacity of its NodeClaims
and their count as ``nodes``, Karpenter's columns) and whether it can be used: ``ValidationSucceeded``
(the pool parses as Karpenter would accept it), ``NodeClassReady`` (its ClusterAPINodeClass exists and is
Ready) and ``Ready`` (both). The provisioner leaves out pools whose NodeClass is missing; these conditions
are how the user finds out why nothing is provisioned for them. ``NodeRegistrationHealthy`` belongs to the
lifecycle controller and is carried over untouched.

A ClusterAPINodeClass is ``Ready`` when it parses and its ``priceTableRef`` ConfigMap (if any) exists and
holds valid prices. ``UnregisteredTaint`` says whether every managed flavor source of the Cluster joins
its nodes with ``karpenter.sh/unregistered:NoExecute``; for ClusterClass clusters nobody but the user can
fix that (a ClusterClass patch), so the condition names the worker classes and MDs lacking it. It is not
part of ``Ready``: nodes without the taint still work, only less safely.

Status is written with a JSON patch on the ``status`` subresource that tests the condition list it
replaces (so a condition another controller wrote meanwhile is not lost), and only when something
changed, so the watch event our own write causes ends in a no-op.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from kapstan.api.core import ConfigMap
from kapstan.api.errors import ManifestError
from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND, ClusterAPINodeClass, NodePool
from kapstan.api.meta import to_milli_checked
from kapstan.api.quantity import format_quantity
from kapstan.api.wellknown import (
    NODECLASS_READY,
    NODEPOOL,
    READY,
    UNREGISTERED_TAINT_CONDITION,
    UNREGISTERED_TAINT_TEXT,
    VALIDATION_SUCCEEDED,
)
from kapstan.catalog import node_class_settings
from kapstan.controllers import conditions as cond
from kapstan.controllers.cluster import StateNode
from kapstan.controllers.reconciler import Reconciler
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import CONFIGMAPS, Object, Resource
from kapstan.kube.controller import Result
from kapstan.kube.errors import ApiError
from kapstan.kube.jsonpatch import patch_if_unchanged
from kapstan.kube.kinds import NODECLASSES, NODEPOOLS
from kapstan.kube.meta import Meta
from kapstan.kube.store import Event
from kapstan.observability import metrics

log = logging.getLogger(__name__)

NODES_RESOURCE = "nodes"
PRICE_TABLE_RECHECK = 300.0
"""Seconds between looks at a price table ConfigMap: there is no informer for ConfigMaps."""
PRICE_TABLE_RETRY = 15.0
"""Seconds between looks for a price table ConfigMap that is missing, so creating it is noticed soon."""


class NodePoolStatus(Reconciler):
    """Writes ``status.resources`` and the NodeClassReady, ValidationSucceeded and Ready conditions."""

    name = "nodepool-status"

    def watch(self) -> None:
        self.state.node_pools.add_handler(self.controller.enqueue)
        self.state.node_claims.add_handler(self._on_claim)
        self.state.node_classes.add_handler(self._on_node_class)

    def _on_claim(self, event: Event) -> None:
        for claim in (event.object, event.old):
            pool = Meta.of(claim).labels.get(NODEPOOL) if claim is not None else None
            if pool:
                self.controller.queue.add(pool)

    def _on_node_class(self, event: Event) -> None:
        name = Meta.of(event.object).name
        for pool in self.state.node_pools.store.objects():
            if _node_class_ref(pool).get("name") == name:
                self.controller.queue.add(Meta.of(pool).name)

    async def reconcile(self, key: str) -> Result:
        pool = self.state.node_pools.store.get(key)
        if pool is None or Meta.of(pool).deleting:
            metrics.forget_nodepool(key)
            return Result()
        generation = Meta.of(pool).generation
        conditions = cond.conditions_of(pool)
        checks = [self._validation(pool), self._node_class(pool)]
        for kind, status, reason, message in checks:
            conditions = cond.with_condition(conditions, kind, status, reason, message, generation)
        failed = [(kind, reason, message) for kind, status, reason, message in checks if status != cond.TRUE]
        if failed:
            kind, reason, message = failed[0]
            conditions = cond.with_condition(
                conditions, READY, cond.FALSE, reason, f"{kind}=False: {message}", generation
            )
        else:
            conditions = cond.with_condition(conditions, READY, cond.TRUE, READY, "", generation)
        claims = self.cluster.in_pool(key)
        resources = _resources(claims)
        self._publish(pool, claims, resources)
        await write_status(self.state, NODEPOOLS, pool, {"resources": resources}, conditions)
        await self._announce(pool, conditions)
        return Result()

    def _publish(self, pool: Object, claims: list[StateNode], resources: dict[str, str]) -> None:
        """The pool's usage, limits, cost per hour (the sum of its claims' prices) and claims by state as
        metrics. Every change of one of its claims reconciles the pool, so the counts follow them."""
        limits = pool.get("spec", {}).get("limits") or {}
        # A hand-edited price (not a number) is left out of the cost; the status still counts the claim.
        cost = sum(claim.price or 0.0 for claim in claims)
        metrics.record_nodepool(
            Meta.of(pool).name,
            usage={key: _amount(key, value) for key, value in resources.items()},
            limits={key: _amount(key, value) for key, value in limits.items() if _amount(key, value) >= 0},
            cost_per_hour=round(cost, 6),
            nodeclaims=Counter(nodeclaim_state(claim) for claim in claims),
        )

    def _validation(self, pool: Object) -> tuple[str, str, str, str]:
        try:
            NodePool.parse(pool)
        except ManifestError as error:
            return VALIDATION_SUCCEEDED, cond.FALSE, "ValidationFailed", str(error)
        return VALIDATION_SUCCEEDED, cond.TRUE, VALIDATION_SUCCEEDED, ""

    def _node_class(self, pool: Object) -> tuple[str, str, str, str]:
        ref = _node_class_ref(pool)
        name = str(ref.get("name") or "")
        if (ref.get("group"), ref.get("kind")) != (NODECLASS_GROUP, NODECLASS_KIND):
            message = (
                f"unsupported node class {ref.get('kind')}.{ref.get('group')} "
                f"(expected {NODECLASS_KIND}.{NODECLASS_GROUP})"
            )
            return NODECLASS_READY, cond.FALSE, "NodeClassNotFound", message
        node_class = self.state.node_classes.store.get(name)
        if node_class is None:
            return NODECLASS_READY, cond.FALSE, "NodeClassNotFound", f'{NODECLASS_KIND} "{name}" not found'
        if not cond.is_true(node_class, READY):
            ready = cond.find(node_class, READY) or {}
            detail = ready.get("message") or "its Ready condition is not True yet"
            return NODECLASS_READY, cond.FALSE, "NodeClassNotReady", f'{NODECLASS_KIND} "{name}": {detail}'
        return NODECLASS_READY, cond.TRUE, NODECLASS_READY, ""

    async def _announce(self, pool: Object, conditions: list[dict[str, Any]]) -> None:
        """A Warning Event when the pool stops being Ready (only then: the Event records a transition)."""
        before = cond.find(pool, READY)
        after = next(c for c in conditions if c["type"] == READY)
        if after["status"] == cond.FALSE and (before is None or before.get("status") != cond.FALSE):
            log.warning(
                "nodepool not ready", extra={"nodepool": Meta.of(pool).name, "detail": after["message"]}
            )
            await self.events.emit(pool, "Warning", after["reason"], after["message"])


class NodeClassStatus(Reconciler):
    """Writes the Ready and UnregisteredTaint conditions of every ClusterAPINodeClass."""

    name = "nodeclass-status"
    recheck = PRICE_TABLE_RECHECK
    """Seconds between looks at a price table that is there."""
    retry = PRICE_TABLE_RETRY
    """Seconds between looks at a price table that is missing or invalid."""

    def watch(self) -> None:
        self.state.node_classes.add_handler(self.controller.enqueue)
        # Whether the templates carry the taint depends on the MDs, templates, Clusters and ClusterClasses.
        self.provider.on_flavor_source_change(self._requeue_all)

    def _requeue_all(self) -> None:
        for node_class in self.state.node_classes.store.objects():
            self.controller.queue.add(Meta.of(node_class).name)

    async def reconcile(self, key: str) -> Result:
        node_class = self.state.node_classes.store.get(key)
        if node_class is None or Meta.of(node_class).deleting:
            return Result()
        generation = Meta.of(node_class).generation
        status, reason, message, requeue = await self._readiness(node_class)
        conditions = cond.with_condition(
            cond.conditions_of(node_class), READY, status, reason, message, generation
        )
        missing = self.provider.untainted_sources()
        if missing:
            taint = (
                cond.FALSE,
                "TaintMissing",
                f"{UNREGISTERED_TAINT_TEXT} is missing from the bootstrap templates of: "
                + "; ".join(missing),
            )
        else:
            taint = (cond.TRUE, "TaintPresent", "")
        conditions = cond.with_condition(conditions, UNREGISTERED_TAINT_CONDITION, *taint, generation)
        await write_status(self.state, NODECLASSES, node_class, {}, conditions)
        await self._announce(node_class, conditions)
        return Result(requeue_after=requeue)

    async def _readiness(self, node_class: Object) -> tuple[str, str, str, float | None]:
        """(status, reason, message, when to look again) of the Ready condition."""
        try:
            parsed = ClusterAPINodeClass.parse(node_class)
        except ManifestError as error:
            return cond.FALSE, "ValidationFailed", str(error), None
        ref = parsed.spec.price_table_ref
        if ref is None:
            return cond.TRUE, READY, "", None
        try:
            raw = await self.state.workload.get(CONFIGMAPS, ref.name, ref.namespace)
        except ApiError as error:
            if not error.not_found:
                raise
            message = f'priceTableRef: ConfigMap "{ref.namespace}/{ref.name}" not found'
            return cond.FALSE, "PriceTableNotFound", message, self.retry
        try:
            config_map = ConfigMap.parse(raw)
            node_class_settings(parsed, {(ref.namespace, ref.name): config_map})
        except ManifestError as error:
            return cond.FALSE, "PriceTableInvalid", str(error), self.retry
        return cond.TRUE, READY, "", self.recheck

    async def _announce(self, node_class: Object, conditions: list[dict[str, Any]]) -> None:
        for kind in (READY, UNREGISTERED_TAINT_CONDITION):
            before = cond.find(node_class, kind)
            after = next(c for c in conditions if c["type"] == kind)
            if after["status"] == cond.FALSE and (before is None or before.get("status") != cond.FALSE):
                log.warning(
                    "nodeclass condition false",
                    extra={
                        "nodeclass": Meta.of(node_class).name,
                        "condition": kind,
                        "detail": after["message"],
                    },
                )
                await self.events.emit(node_class, "Warning", after["reason"], after["message"])


def nodeclaim_state(claim: StateNode) -> str:
    """Where a NodeClaim is in its lifecycle, for ``kapstan_nodeclaims``: the first condition not yet
    True, or ``deleting`` once it is being terminated."""
    if claim.claim_deleting:
        return metrics.NODECLAIM_DELETING
    if not claim.launched:
        return metrics.NODECLAIM_LAUNCHING
    if not claim.registered:
        return metrics.NODECLAIM_REGISTERING
    if not claim.initialized:
        return metrics.NODECLAIM_INITIALIZING
    return metrics.NODECLAIM_INITIALIZED


def _resources(claims: list[StateNode]) -> dict[str, str]:
    """Summed capacity of a pool's NodeClaims, as Karpenter counts it: launched or not, and until they
    are gone."""
    totals: dict[str, int] = {}
    for claim in claims:
        for name, value in ((claim.claim or {}).get("status", {}).get("capacity") or {}).items():
            try:
                totals[name] = totals.get(name, 0) + to_milli_checked(value)
            except ValueError:
                log.warning("ignoring capacity %s=%r of NodeClaim %s", name, value, claim.name)
    resources = {name: format_quantity(name, amount) for name, amount in sorted(totals.items())}
    resources[NODES_RESOURCE] = str(len(claims))
    return resources


def _amount(name: str, value: object) -> float:
    """A quantity in whole units (cores, bytes, nodes) for a gauge; -1 when it does not parse."""
    try:
        return to_milli_checked(str(value)) / 1000
    except ValueError:
        return -1.0


def _node_class_ref(pool: Object) -> dict[str, Any]:
    ref = pool.get("spec", {}).get("template", {}).get("spec", {}).get("nodeClassRef")
    return ref if isinstance(ref, dict) else {}


async def write_status(
    state: ClusterState,
    resource: Resource,
    obj: Object,
    fields: Mapping[str, dict[str, str]],
    conditions: list[dict[str, Any]],
) -> None:
    """Set ``status`` members ``fields`` (maps, each written whole) and ``conditions``, where they differ.

    Conditions are compared by type: ``with_condition`` moves the condition it sets to the end of the
    list, so the order says nothing. The write tests the condition list it replaces (``status_patch``):
    another controller's condition since the read refuses it, and the watch brings the newer pool or
    class and another reconcile; any other write since (our own ``resources`` the cache does not show
    yet, a label) no longer does. Nor does a spec change since: the conditions say the generation they
    were found for, and the change's own watch event reconciles again.
    """
    status = obj.get("status") or {}
    changed: dict[str, object] = {
        name: dict(wanted) for name, wanted in fields.items() if (status.get(name) or {}) != wanted
    }
    if _by_type(conditions) != _by_type(cond.conditions_of(obj)):
        changed["conditions"] = conditions
    if not changed:
        return
    name = Meta.of(obj).name
    patch = cond.status_patch(obj, changed)
    if await patch_if_unchanged(state.workload, resource, name, patch, subresource="status") is None:
        log.debug("conditions of %s %s changed meanwhile", resource.kind, name)


def _by_type(conditions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(c.get("type")): c for c in conditions}
