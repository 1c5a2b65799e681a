"""A NodeClaim from creation to a working node: Launched, Registered, Initialized (DESIGN.md 4 and 5).

- Launched: the CAPI provider claims a Machine of the offering's MD (scaling it up if needed). The call is
  idempotent (the claim is written on the Machine), so a retry after a crash finds the same Machine.
- Registered: the Node with the Machine's providerID exists. kapstan copies the claim's labels and taints
  onto it and removes ``karpenter.sh/unregistered``, so no pod lands there before that.
- Initialized: the Node is Ready and the claim's startup taints are gone.

A claim that is not Launched 5 minutes after creation, or not Registered 15 minutes after launch, is
deleted (its Machine goes with it through the termination finalizer), with an Event and a NodePool
condition, so pods get a fresh decision instead of waiting on a node that will not come.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kapstan.api.quantity import format_quantity
from kapstan.api.wellknown import (
    INITIALIZED,
    INITIALIZED_LABEL,
    LAUNCHED,
    MACHINE_ANNOTATION,
    PRICE_ANNOTATION,
    READY,
    REGISTERED,
    REGISTERED_LABEL,
    REGISTRATION_HEALTHY,
    UNREGISTERED_TAINT_KEY,
)
from kapstan.capi.provider import (
    CloudProvider,
    CreateError,
    InsufficientCapacity,
    LaunchedMachine,
    LaunchRequest,
    NotFound,
    Paused,
)
from kapstan.catalog import FlavorSource
from kapstan.controllers import conditions as cond
from kapstan.controllers.state import BY_NODECLAIM, PROVIDER_ID, ClusterState
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS, NODES
from kapstan.observability import metrics
from kapstan.scheduling.model import CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL, ZONE, InstanceType
from kapstan.snapshot import SimulationInput

log = logging.getLogger(__name__)


CatalogSource = Callable[[], Awaitable[SimulationInput]]
"""The live catalog and instance types (``ClusterState.simulation_input`` without pods)."""


@dataclass(frozen=True)
class Timeouts:
    launch: float = 300.0
    registration: float = 900.0
    retry: float = 10.0
    poll: float = 5.0


class Lifecycle:
    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        catalog: CatalogSource,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.state = state
        self.provider = provider
        self.events = events
        self.catalog = catalog
        self.timeouts = timeouts or Timeouts()

    async def reconcile(self, claim: Object) -> Result:
        if not cond.is_true(claim, LAUNCHED):
            return await self._launch(claim)
        if not claim.get("status", {}).get("providerID"):
            return await self._copy_provider_id(claim)
        if not cond.is_true(claim, REGISTERED):
            return await self._register(claim)
        if not cond.is_true(claim, INITIALIZED):
            return await self._initialize(claim)
        return Result()

    # -- Launched --------------------------------------------------------------------------------------

    async def _launch(self, claim: Object) -> Result:
        name = claim["metadata"]["name"]
        if cond.age_seconds(claim["metadata"].get("creationTimestamp")) > self.timeouts.launch:
            return await self._give_up(
                claim, "LaunchTimeout", f"not launched within {self.timeouts.launch:.0f}s"
            )
        simulation = await self.catalog()
        flavors = {it.name: it for it in simulation.snapshot.instance_types}
        refused: list[str] = []
        for flavor in _launch_order(claim):
            labels = claim["metadata"].get("labels") or {}
            offering = (flavor, labels.get(ZONE, ""), labels.get(CAPACITY_TYPE, ""))
            source = simulation.catalog.sources.get(offering)
            if source is None:
                refused.append(f"no MachineDeployment or worker class offers {'/'.join(offering)}")
                continue
            if flavor != labels.get(INSTANCE_TYPE):
                # Record the flavor before launching it: a restarted operator must look for the Machine in
                # this flavor's MD, not start another one in the first choice's.
                claim = await self._switch_flavor(claim, flavors, flavor)
            try:
                machine = await self.provider.create(LaunchRequest(name, source))
            except InsufficientCapacity as error:
                refused.append(str(error))
                continue
            except NotFound as error:
                refused.append(str(error))
                continue
            except (Paused, CreateError) as error:
                await self.events.emit(claim, "Warning", "LaunchDelayed", str(error))
                return Result(requeue_after=self.timeouts.retry)
            return await self._launched(claim, machine, source, flavors.get(flavor))
        return await self._give_up(claim, "LaunchFailed", "; ".join(refused) or "no flavor to launch")

    async def _switch_flavor(self, claim: Object, flavors: Mapping[str, InstanceType], flavor: str) -> Object:
        labels = claim["metadata"].get("labels") or {}
        before, after = flavors.get(labels.get(INSTANCE_TYPE, "")), flavors.get(flavor)
        patch_labels: dict[str, str | None] = {key: None for key in (before.labels if before else {})}
        patch_labels.update(after.labels if after else {})
        patch_labels[INSTANCE_TYPE] = flavor
        await self.events.emit(
            claim, "Normal", "FlavorFallback", f"launching {flavor} instead of {labels.get(INSTANCE_TYPE)}"
        )
        prices = [
            offering.price
            for offering in (after.offerings if after else ())
            if (offering.zone, offering.capacity_type) == (labels.get(ZONE), labels.get(CAPACITY_TYPE))
        ]
        meta: dict[str, Any] = {
            "labels": patch_labels,
            "resourceVersion": claim["metadata"]["resourceVersion"],
        }
        if prices:
            meta["annotations"] = {PRICE_ANNOTATION: str(min(prices))}
        patch = {"metadata": meta}
        updated: Object = await self.state.workload.patch(NODECLAIMS, claim["metadata"]["name"], patch)
        return updated

    async def _launched(
        self, claim: Object, machine: LaunchedMachine, source: FlavorSource, flavor: InstanceType | None
    ) -> Result:
        name = claim["metadata"]["name"]
        ref = f"{machine.ref.namespace}/{machine.ref.name}"
        if (claim["metadata"].get("annotations") or {}).get(MACHINE_ANNOTATION) != ref:
            patch = {"metadata": {"annotations": {MACHINE_ANNOTATION: ref}}}
            claim = await self.state.workload.patch(NODECLAIMS, name, patch)
        status: dict[str, Any] = {
            "providerID": machine.provider_id,
            "conditions": cond.with_condition(cond.conditions_of(claim), LAUNCHED, cond.TRUE, LAUNCHED),
        }
        if flavor is not None:
            status["capacity"] = _quantities(flavor.capacity)
            status["allocatable"] = _quantities(flavor.allocatable)
        await self._status(claim, status)
        log.info("launched", extra={"nodeclaim": name, "machine": ref})
        await self.events.emit(claim, "Normal", LAUNCHED, f"Machine {ref} of {source.kind} {source.name}")
        return Result(requeue_after=self.timeouts.poll)

    async def _copy_provider_id(self, claim: Object) -> Result:
        machines = self.state.machines.store.by_index(BY_NODECLAIM, claim["metadata"]["name"])
        provider_id = next((m["spec"].get("providerID") for m in machines if m["spec"].get("providerID")), "")
        if provider_id:
            await self._status(claim, {"providerID": provider_id})
            return Result()
        return await self._check_registration_timeout(claim)

    # -- Registered ------------------------------------------------------------------------------------

    async def _register(self, claim: Object) -> Result:
        provider_id = claim["status"]["providerID"]
        nodes = self.state.nodes.store.by_index(PROVIDER_ID, provider_id)
        if not nodes:
            return await self._check_registration_timeout(claim)
        node = nodes[0]
        spec = claim.get("spec", {})
        wanted_taints = [*spec.get("taints", []), *spec.get("startupTaints", [])]
        taints = [
            t for t in node.get("spec", {}).get("taints") or [] if t.get("key") != UNREGISTERED_TAINT_KEY
        ]
        taints += [t for t in wanted_taints if not any(_same_taint(t, have) for have in taints)]
        labels = {**(claim["metadata"].get("labels") or {}), REGISTERED_LABEL: "true"}
        patch = {
            "metadata": {"labels": labels, "resourceVersion": node["metadata"]["resourceVersion"]},
            "spec": {"taints": taints},
        }
        await self.state.workload.patch(NODES, node["metadata"]["name"], patch)
        conditions = cond.with_condition(cond.conditions_of(claim), REGISTERED, cond.TRUE, REGISTERED)
        await self._status(claim, {"nodeName": node["metadata"]["name"], "conditions": conditions})
        await self._pool_condition(claim, cond.TRUE, "NodeRegistered", "")
        metrics.NODES_CREATED.labels((claim["metadata"].get("labels") or {}).get(NODEPOOL, "")).inc()
        log.info(
            "registered", extra={"nodeclaim": claim["metadata"]["name"], "node": node["metadata"]["name"]}
        )
        await self.events.emit(claim, "Normal", REGISTERED, f"Node {node['metadata']['name']} registered")
        return Result()

    async def _check_registration_timeout(self, claim: Object) -> Result:
        launched = cond.find(claim, LAUNCHED) or {}
        if cond.age_seconds(launched.get("lastTransitionTime")) > self.timeouts.registration:
            return await self._give_up(
                claim,
                "RegistrationTimeout",
                f"no Node registered within {self.timeouts.registration:.0f}s of launch",
            )
        return Result(requeue_after=self.timeouts.poll)

    # -- Initialized -----------------------------------------------------------------------------------

    async def _initialize(self, claim: Object) -> Result:
        node = self.state.nodes.store.get(claim["status"].get("nodeName", ""))
        if node is None:
            return Result(requeue_after=self.timeouts.poll)
        startup = claim.get("spec", {}).get("startupTaints") or []
        waiting = [
            t for t in node.get("spec", {}).get("taints") or [] if any(_same_taint(t, s) for s in startup)
        ]
        if not cond.is_true(node, READY) or waiting:
            return Result()  # the Node's next change brings us back
        if (node["metadata"].get("labels") or {}).get(INITIALIZED_LABEL) != "true":
            await self.state.workload.patch(
                NODES, node["metadata"]["name"], {"metadata": {"labels": {INITIALIZED_LABEL: "true"}}}
            )
        conditions = cond.conditions_of(claim)
        for kind in (INITIALIZED, READY):
            conditions = cond.with_condition(conditions, kind, cond.TRUE, kind)
        await self._status(claim, {"conditions": conditions})
        log.info(
            "initialized", extra={"nodeclaim": claim["metadata"]["name"], "node": node["metadata"]["name"]}
        )
        await self.events.emit(claim, "Normal", INITIALIZED, f"Node {node['metadata']['name']} is ready")
        return Result()

    # -- helpers ---------------------------------------------------------------------------------------

    async def _give_up(self, claim: Object, reason: str, message: str) -> Result:
        name = claim["metadata"]["name"]
        log.warning("deleting nodeclaim", extra={"nodeclaim": name, "reason": reason, "detail": message})
        await self.events.emit(claim, "Warning", reason, f"deleting NodeClaim: {message}")
        if reason.endswith("Timeout"):
            await self._pool_condition(claim, cond.FALSE, reason, f"NodeClaim {name}: {message}")
        await self.state.workload.delete(NODECLAIMS, name)
        return Result()

    async def _pool_condition(self, claim: Object, status: str, reason: str, message: str) -> None:
        """Set the NodePool's NodeRegistrationHealthy condition. The status controller writes the pool's
        other conditions, so this write is conditional on the version read and retried on a conflict."""
        pool_name = (claim["metadata"].get("labels") or {}).get(NODEPOOL, "")
        cached = self.state.node_pools.store.get(pool_name)
        existing = cond.find(cached, REGISTRATION_HEALTHY) if cached else None
        if cached is None or (
            existing and (existing.get("status"), existing.get("reason")) == (status, reason)
        ):
            return
        for _ in range(3):
            try:
                pool = await self.state.workload.get(NODEPOOLS, pool_name)
            except ApiError as error:
                if error.not_found:
                    return
                raise
            generation = pool["metadata"].get("generation", 0)
            conditions = cond.with_condition(
                cond.conditions_of(pool), REGISTRATION_HEALTHY, status, reason, message, generation
            )
            patch = {
                "metadata": {"resourceVersion": pool["metadata"]["resourceVersion"]},
                "status": {"conditions": conditions},
            }
            try:
                await self.state.workload.patch(NODEPOOLS, pool_name, patch, subresource="status")
                return
            except ApiError as error:
                if not error.conflict:
                    raise

    async def _status(self, claim: Object, status: Mapping[str, Any]) -> None:
        await self.state.workload.patch(
            NODECLAIMS, claim["metadata"]["name"], {"status": dict(status)}, subresource="status"
        )


def _launch_order(claim: Object) -> list[str]:
    """The flavor on the label first (it may have a Machine already), then the requirement's ranking."""
    current = (claim["metadata"].get("labels") or {}).get(INSTANCE_TYPE, "")
    ranked: list[str] = []
    for requirement in claim.get("spec", {}).get("requirements") or []:
        if requirement.get("key") == INSTANCE_TYPE and requirement.get("operator") == "In":
            ranked = list(requirement.get("values") or [])
    return [current, *(flavor for flavor in ranked if flavor != current)] if current else ranked


def _same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("key"), a.get("effect"), a.get("value", "")) == (
        b.get("key"),
        b.get("effect"),
        b.get("value", ""),
    )


def _quantities(resources: Mapping[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, amount) for name, amount in sorted(resources.items())}
