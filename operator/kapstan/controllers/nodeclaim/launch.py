"""Launched: the CAPI provider claims a Machine of the offering's MD for the NodeClaim.

The flavors are tried in the claim's order (the one on its label first, it may have a Machine already,
then the ranked alternatives of its requirement); a full MD (``InsufficientCapacity``) or a missing one
moves on to the next, and so does an offering backed off after failed launches (``controllers/offerings.py``;
a full MD backs its offering off too, and so does CAPI blocking its scale-up or its MachineSet preflight
checks holding it; a full MD and a hold for a minute at a time); a paused MD or a Machine that did not appear is retried later. The call is
idempotent (the claim is written on the Machine), so a retry after a crash finds the same Machine.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kapstan.api.quantity import format_quantity
from kapstan.api.wellknown import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    LAUNCHED,
    MACHINE_ANNOTATION,
    PRICE_ANNOTATION,
    ZONE,
)
from kapstan.capi.provider import (
    CloudProvider,
    CreateError,
    InsufficientCapacity,
    LaunchBlocked,
    LaunchedMachine,
    LaunchRequest,
    NotFound,
    Paused,
    PreflightHold,
)
from kapstan.catalog import FlavorSource
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim.liveness import Steps
from kapstan.controllers.taints import REREAD
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.jsonpatch import as_read, patch_if_unchanged, set_members
from kapstan.kube.kinds import NODECLAIMS
from kapstan.kube.meta import Meta
from kapstan.scheduling.model import InstanceType
from kapstan.snapshot import SimulationInput

log = logging.getLogger(__name__)

METADATA = ("metadata",)
ANNOTATIONS = ("metadata", "annotations")

CatalogSource = Callable[[], Awaitable[SimulationInput]]
"""The live catalog and instance types (``ClusterState.simulation_input`` without pods)."""


class Launch:
    def __init__(self, steps: Steps, provider: CloudProvider, catalog: CatalogSource) -> None:
        self.steps = steps
        self.provider = provider
        self.catalog = catalog

    async def reconcile(self, claim: Object) -> Result:
        name = Meta.of(claim).name
        timeouts = self.steps.timeouts
        if self.steps.age(Meta.of(claim).created) > timeouts.launch:
            return await self.steps.give_up(
                claim, "LaunchTimeout", f"not launched within {timeouts.launch:.0f}s", offering_failed=True
            )
        simulation = await self.catalog()
        flavors = {it.name: it for it in simulation.snapshot.instance_types}
        refused: list[str] = []
        for flavor in launch_order(claim):
            labels = Meta.of(claim).labels
            offering = (flavor, labels.get(ZONE, ""), labels.get(CAPACITY_TYPE, ""))
            source = simulation.catalog.sources.get(offering)
            if source is None:
                refused.append(f"no MachineDeployment or worker class offers {'/'.join(offering)}")
                continue
            blocked = self.steps.state.backoff.blocked(offering)
            if blocked:
                refused.append(blocked)
                continue
            if flavor != labels.get(INSTANCE_TYPE):
                # Record the flavor before launching it: a restarted operator must look for the Machine in
                # this flavor's MD, not start another one in the first choice's.
                switched = await self._switch_flavor(claim, flavors, flavor, refused)
                if switched is None:
                    return Result(requeue_after=REREAD)  # relabelled since: decide from the newer copy
                claim = switched
            # The wait for a Machine is bounded by what is left of the launch timeout.
            left = max(timeouts.launch - self.steps.age(Meta.of(claim).created), 0.0)
            try:
                machine = await self.provider.create(LaunchRequest(name, source, wait=left))
            except (InsufficientCapacity, LaunchBlocked) as error:
                refused.append(str(error))
                # Both end by themselves, when CAPI's checks pass or a Machine of the MD goes.
                hold = isinstance(error, PreflightHold | InsufficientCapacity)
                await self.steps.offering_failed(claim, offering, str(error), hold=hold)
                continue
            except NotFound as error:
                refused.append(str(error))
                continue
            except (Paused, CreateError) as error:
                await self.steps.events.emit(claim, "Warning", "LaunchDelayed", str(error))
                return Result(requeue_after=timeouts.retry)
            self.steps.state.backoff.launching(offering)
            return await self._launched(claim, machine, source, flavors.get(flavor))
        return await self.steps.give_up(claim, "LaunchFailed", "; ".join(refused) or "no flavor to launch")

    async def _switch_flavor(
        self, claim: Object, flavors: Mapping[str, InstanceType], flavor: str, why: list[str]
    ) -> Object | None:
        """Relabel the claim for ``flavor`` if its labels are still those read (None if not); its Event
        says why the flavors before it were passed over.

        The labels are written whole (the old flavor's go, the new one's come), so the JSON patch tests
        them as read; not the claim's resourceVersion, which any status or annotation write moves."""
        claim_meta = Meta.of(claim)
        labels = claim_meta.labels
        before, after = flavors.get(labels.get(INSTANCE_TYPE, "")), flavors.get(flavor)
        relabelled = {
            key: value for key, value in labels.items() if key not in (before.labels if before else {})
        }
        relabelled.update(after.labels if after else {})
        relabelled[INSTANCE_TYPE] = flavor
        prices = [
            offering.price
            for offering in (after.offerings if after else ())
            if (offering.zone, offering.capacity_type) == (labels.get(ZONE), labels.get(CAPACITY_TYPE))
        ]
        patch = [
            *set_members(claim, METADATA, {"labels": relabelled}, tested=as_read(claim, METADATA, "labels")),
            *set_members(claim, ANNOTATIONS, {PRICE_ANNOTATION: str(min(prices))} if prices else {}),
        ]
        updated = await patch_if_unchanged(self.steps.state.workload, NODECLAIMS, claim_meta.name, patch)
        if updated is None:
            return None
        await self.steps.events.emit(
            claim,
            "Normal",
            "FlavorFallback",
            f"launching {flavor} instead of {labels.get(INSTANCE_TYPE)}: {'; '.join(why)}",
        )
        return updated

    async def _launched(
        self, claim: Object, machine: LaunchedMachine, source: FlavorSource, flavor: InstanceType | None
    ) -> Result:
        name = Meta.of(claim).name
        ref = f"{machine.ref.namespace}/{machine.ref.name}"
        if Meta.of(claim).annotations.get(MACHINE_ANNOTATION) != ref:
            patch = {"metadata": {"annotations": {MACHINE_ANNOTATION: ref}}}
            claim = await self.steps.state.workload.patch(NODECLAIMS, name, patch)
        status: dict[str, Any] = {
            "providerID": machine.provider_id,
            "conditions": self.steps.condition(cond.conditions_of(claim), LAUNCHED, cond.TRUE, LAUNCHED),
        }
        if flavor is not None:
            status["capacity"] = _quantities(flavor.capacity)
            status["allocatable"] = _quantities(flavor.allocatable)
        if not await self.steps.write_status(claim, status):
            return Result(requeue_after=REREAD)  # the Machine is found again: the claim is on it
        log.info("launched", extra={"nodeclaim": name, "machine": ref})
        await self.steps.events.emit(
            claim, "Normal", LAUNCHED, f"Machine {ref} of {source.kind} {source.name}"
        )
        return Result(requeue_after=self.steps.timeouts.poll)


def launch_order(claim: Object) -> list[str]:
    """The flavor on the label first (it may have a Machine already), then the requirement's ranking."""
    current = Meta.of(claim).labels.get(INSTANCE_TYPE, "")
    ranked: list[str] = []
    for requirement in claim.get("spec", {}).get("requirements") or []:
        if requirement.get("key") == INSTANCE_TYPE and requirement.get("operator") == "In":
            ranked = list(requirement.get("values") or [])
    return [current, *(flavor for flavor in ranked if flavor != current)] if current else ranked


def _quantities(resources: Mapping[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, amount) for name, amount in sorted(resources.items())}
