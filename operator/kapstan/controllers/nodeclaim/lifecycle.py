"""A NodeClaim from creation to a working node: Launched, Registered, Initialized
(docs/architecture.md#data-flow, steps 5 and 6).

- Launched (``launch``): the CAPI provider claims a Machine of the offering's MD (scaling it up if
  needed). The call is idempotent (the claim is written on the Machine), so a retry after a crash finds the
  same Machine.
- Registered (``registration``): the Node with the Machine's providerID exists. kapstan copies the claim's
  labels and taints onto it and removes ``karpenter.sh/unregistered``, so no pod lands there before that.
- Initialized (``initialization``): the Node is Ready and the claim's startup taints are gone.

A claim that is not Launched 5 minutes after creation, or not Registered 15 minutes after launch, is
deleted (its Machine goes with it through the termination finalizer), with an Event and a NodePool
condition (``liveness``), so pods get a fresh decision instead of waiting on a node that will not come. A
launched claim whose Machine or Node is gone or failed is deleted at once (``garbagecollection``).
"""

from __future__ import annotations

from kapstan.api.wellknown import INITIALIZED, LAUNCHED, REGISTERED
from kapstan.capi.provider import CloudProvider
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim.garbagecollection import GarbageCollection
from kapstan.controllers.nodeclaim.initialization import Initialization
from kapstan.controllers.nodeclaim.launch import CatalogSource, Launch
from kapstan.controllers.nodeclaim.liveness import Steps, Timeouts
from kapstan.controllers.nodeclaim.registration import Registration
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Result
from kapstan.kube.events import EventRecorder

__all__ = ["CatalogSource", "Lifecycle", "Timeouts"]


class Lifecycle:
    """Takes a live claim one step further each reconcile, in Karpenter's order."""

    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        catalog: CatalogSource,
        timeouts: Timeouts | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        steps = Steps(state, events, timeouts or Timeouts(), clock)
        self.timeouts = steps.timeouts
        self.launch = Launch(steps, provider, catalog)
        self.garbage_collection = GarbageCollection(steps, provider)
        self.registration = Registration(steps)
        self.initialization = Initialization(steps)

    async def reconcile(self, claim: Object) -> Result:
        if not cond.is_true(claim, LAUNCHED):
            return await self.launch.reconcile(claim)
        given_up = await self.garbage_collection.reconcile(claim)
        if given_up is not None:
            return given_up
        if not cond.is_true(claim, REGISTERED):
            return await self.registration.reconcile(claim)
        if not cond.is_true(claim, INITIALIZED):
            return await self.initialization.reconcile(claim)
        return Result()
