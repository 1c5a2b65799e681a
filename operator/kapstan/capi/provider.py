"""The seam between kapstan's controllers and Cluster API (docs/architecture.md#one-seam-to-capi).

Karpenter's controllers talk to infrastructure through one ``CloudProvider`` interface whose comments
state each method's contract and typed errors; ours does the same for CAPI. Expected failures are typed
(docs/architecture.md#typed-failures) so a controller can tell "try again later" (``Paused``, ``RollingOut``,
``CreateError``) from "this offering is full" (``InsufficientCapacity``) from "already gone"
(``NotFound``). Anything else (an ``ApiError`` the provider could not interpret) is a bug or an outage
and propagates as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kapstan.catalog import FlavorSource


@dataclass(frozen=True)
class MachineRef:
    """One Machine in the management cluster."""

    namespace: str
    name: str


@dataclass(frozen=True)
class LaunchRequest:
    """Launch one node for ``nodeclaim`` from ``source`` (the offering the solver chose)."""

    nodeclaim: str
    source: FlavorSource
    wait: float | None = None
    """At most how many seconds ``create`` may wait for a Machine to appear (what is left of the claim's
    launch timeout); None leaves it to the provider's own bound."""


@dataclass(frozen=True)
class LaunchedMachine:
    """A Machine kapstan has claimed for a NodeClaim."""

    ref: MachineRef
    nodeclaim: str
    machine_deployment: str
    provider_id: str = ""
    """``Machine.spec.providerID``; empty until the infrastructure provider has set it."""
    deleting: bool = False
    """The Machine has a deletionTimestamp or is marked ``cluster.x-k8s.io/delete-machine``."""


class ProviderError(Exception):
    """An expected failure of a provider call; the message names the NodeClaim or Machine and the MD."""


class NotFound(ProviderError):
    """The Machine, MachineDeployment or Cluster does not exist."""


class InsufficientCapacity(ProviderError):
    """The MD is at its ``cluster-api-autoscaler-node-group-max-size``: pick another offering."""


class BelowMinSize(ProviderError):
    """Removing the Machine would take the MD below its ``cluster-api-autoscaler-node-group-min-size``."""


class Paused(ProviderError):
    """The MD or its Cluster is paused (``cluster.x-k8s.io/paused`` or ``Cluster.spec.paused``): retry later."""


class RollingOut(ProviderError):
    """The MD is rolling out; it is not scaled down until the rollout ends: retry later."""


class LaunchBlocked(ProviderError):
    """CAPI will not create the MD's Machines now (its ScalingUp condition says scaling up is blocked: a
    missing bootstrap or infrastructure template): pick another offering. Replicas this call added are
    taken back before it is raised."""


class CreateError(ProviderError):
    """The MD was scaled (or had room) but no Machine appeared in time: retry; a retry does not scale again."""


class CloudProvider(Protocol):
    """Nodes as Cluster API Machines. Every method is safe to retry after a crash or a timeout."""

    async def create(self, request: LaunchRequest) -> LaunchedMachine:
        """Claim a Machine of ``request.source``'s MD for ``request.nodeclaim`` and return it.

        A Machine already claimed by the NodeClaim is returned as it is; else an unclaimed Machine of the MD
        is claimed; else the MD is scaled up by one and the new Machine claimed. So a retry never adds a
        second Machine. A worker-class source whose topology entry does not exist yet gets it added
        first. Raises ``NotFound`` (no such MD or Cluster), ``Paused``, ``InsufficientCapacity`` (max size
        reached), ``LaunchBlocked`` (CAPI says scaling up is blocked) or ``CreateError`` (no Machine, or no
        MD for a new entry, appeared within ``request.wait``).
        """
        ...

    async def delete(self, machine: MachineRef, *, claimed_by: str | None = None) -> None:
        """Remove exactly ``machine``: mark it for deletion, then lower its MD's replicas by one.

        Returns at once if it is already deleting or gone, and, when ``claimed_by`` is given, if the
        Machine's claim is no longer that one (``""``: nobody's), so a stray Machine a launch has just
        claimed is not removed under it. Raises ``Paused``, ``RollingOut`` or ``BelowMinSize``, each before
        anything is changed.
        """
        ...

    async def trim(self, namespace: str, machine_deployment: str) -> int:
        """Lower the MD's replicas to its live Machines when they exceed them (replicas that launches
        added for Machines that never came); returns how many were taken back. Serialized with creates
        and deletes of the MD, so it never takes a replica from a launch in progress in this process.
        Raises ``NotFound``, ``Paused`` or ``RollingOut``, each before anything is changed."""
        ...

    async def get(self, machine: MachineRef) -> LaunchedMachine:
        """The claimed Machine as it is now (for its providerID). Raises ``NotFound`` if it is gone or
        was never claimed."""
        ...

    async def list(self, namespace: str, cluster: str) -> list[LaunchedMachine]:
        """Every claimed Machine of ``cluster``, including those being deleted, sorted by name."""
        ...
