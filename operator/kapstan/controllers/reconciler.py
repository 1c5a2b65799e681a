"""The shape of a keyed controller over the cluster state: built from the state, the CAPI provider, an
Event recorder and the clock, it registers the handlers that queue keys once, and reconciles one key at a
time (``kube/controller.py`` runs the queue). Adoption, the stray-Machine controller and the two status
controllers are this; ``kapstan run`` builds them all with the same four arguments."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from kapstan.capi.provider import CloudProvider
from kapstan.controllers.state import ClusterState
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Controller, Result
from kapstan.kube.events import EventRecorder


class Reconciler(ABC):
    name: ClassVar[str]
    """The controller's name in logs and metrics."""

    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.state = state
        self.provider = provider
        self.events = events
        self.clock = clock
        self.cluster = state.view
        self.controller = Controller(self.name, self.reconcile, clock=clock)
        self.watch()

    @abstractmethod
    def watch(self) -> None:
        """Register the handlers whose changes queue keys (called once, at the end of ``__init__``)."""

    @abstractmethod
    async def reconcile(self, key: str) -> Result: ...

    async def run(self) -> None:
        await self.controller.run()
