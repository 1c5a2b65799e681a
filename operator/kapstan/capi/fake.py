"""An in-memory ``CloudProvider`` for unit tests of the controllers (docs/architecture.md#one-seam-to-capi).

It keeps the contract the real provider keeps (a NodeClaim gets one Machine however often ``create`` is
retried; ``delete`` is idempotent; the cache reads see what the writes did, and handlers hear of it) and
records every call but the cache reads, so a test can assert what a controller asked for; ``fail_next``
makes the next call of a method raise a typed error instead. What CAPI does on its own is a method a
test calls: a Machine appears (``add``), gets its providerID late (``add`` again), goes away (``remove``),
drifts (``drifts``); an MD appears or changes (``put_machine_deployment``).
"""

from __future__ import annotations

import builtins
import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from kapstan.capi.contract import MACHINES
from kapstan.capi.provider import (
    CloudProvider,
    LaunchedMachine,
    LaunchRequest,
    MachineDeploymentInfo,
    MachineDeploymentRef,
    MachineRef,
    NotFound,
    Paused,
    ProviderError,
    RegistrationTaint,
    TemplateRevision,
)
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Object

Method = Literal["create", "delete", "trim", "get", "list", "ensure_registration_taint"]
Argument = LaunchRequest | MachineRef | MachineDeploymentRef | tuple[str, str]


@dataclass
class Call:
    method: Method
    argument: Argument


@dataclass
class FakeProvider(CloudProvider):
    """Machines are named ``<source name>-<n>`` with providerID ``fake://<name>``."""

    calls: builtins.list[Call] = field(default_factory=builtins.list)
    machines: dict[MachineRef, LaunchedMachine] = field(default_factory=dict)
    _clusters: dict[MachineRef, tuple[str, str]] = field(default_factory=dict)
    drifts: dict[MachineRef, str] = field(default_factory=dict)
    """What ``drift`` answers per Machine ("" when absent)."""
    machine_deployments: dict[MachineDeploymentRef, MachineDeploymentInfo] = field(default_factory=dict)
    untainted: builtins.list[str] = field(default_factory=builtins.list)
    """What ``untainted_sources`` answers; a successful ``ensure_registration_taint`` takes its MD out."""
    assign_provider_ids: bool = True
    """Off: created Machines have no providerID yet (the infrastructure provider sets it later)."""
    _handlers: builtins.list[Callable[[LaunchedMachine], None]] = field(default_factory=builtins.list)
    _md_handlers: builtins.list[Callable[[MachineDeploymentRef], None]] = field(default_factory=builtins.list)
    _source_handlers: builtins.list[Callable[[], None]] = field(default_factory=builtins.list)
    _failures: defaultdict[Method, deque[ProviderError]] = field(default_factory=lambda: defaultdict(deque))
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def fail_next(self, method: Method, error: ProviderError) -> None:
        """Make the next call of ``method`` raise ``error`` (queued: two calls fail twice)."""
        self._failures[method].append(error)

    def _record(self, method: Method, argument: Argument) -> None:
        self.calls.append(Call(method, argument))
        if self._failures[method]:
            raise self._failures[method].popleft()

    async def create(self, request: LaunchRequest) -> LaunchedMachine:
        self._record("create", request)
        for machine in self.machines.values():
            if machine.nodeclaim == request.nodeclaim and not machine.deleting:
                return machine
        source = request.source
        name = f"{source.name}-{next(self._ids)}"
        ref = MachineRef(source.namespace, name)
        provider_id = f"fake://{name}" if self.assign_provider_ids else ""
        self._clusters[ref] = (source.namespace, source.cluster)
        return self.add(LaunchedMachine(ref, request.nodeclaim, source.name, provider_id=provider_id))

    async def delete(self, machine: MachineRef, *, claimed_by: str | None = None) -> None:
        self._record("delete", machine)
        if machine in self.machines and claimed_by not in (None, self.machines[machine].nodeclaim):
            return  # claimed since the caller looked
        if machine in self.machines:
            self.add(replace(self.machines[machine], deleting=True))

    async def trim(self, namespace: str, machine_deployment: str) -> int:
        """Recorded; the fake keeps no replicas, so there is never anything to take back."""
        self._record("trim", (namespace, machine_deployment))
        return 0

    async def get(self, machine: MachineRef) -> LaunchedMachine:
        self._record("get", machine)
        if machine not in self.machines:
            raise NotFound(f"Machine {machine.namespace}/{machine.name} does not exist or is not claimed")
        return self.machines[machine]

    async def list(self, namespace: str, cluster: str) -> builtins.list[LaunchedMachine]:
        self._record("list", (namespace, cluster))
        found = [m for ref, m in self.machines.items() if self._clusters[ref] == (namespace, cluster)]
        return sorted(found, key=lambda m: m.ref.name)

    # -- what CAPI does on its own ---------------------------------------------------------------------

    def add(self, machine: LaunchedMachine) -> LaunchedMachine:
        """A Machine appears or changes (a manual scale-up, a providerID set late)."""
        if not machine.event_target:
            machine = replace(machine, event_target=_machine_object(machine.ref))
        self.machines[machine.ref] = machine
        self._clusters.setdefault(machine.ref, (machine.ref.namespace, ""))
        self._notify(machine)
        return machine

    def remove(self, machine: MachineRef) -> None:
        """What CAPI does after ``delete``: the Machine goes away."""
        gone = self.machines.pop(machine, None)
        self._clusters.pop(machine, None)
        self.drifts.pop(machine, None)
        if gone is not None:
            self._notify(gone)

    def _notify(self, machine: LaunchedMachine) -> None:
        for handler in self._handlers:
            handler(machine)

    def put_machine_deployment(self, md: MachineDeploymentInfo) -> MachineDeploymentInfo:
        """An MD appears or changes (paused, its template fixed, rolled out)."""
        self.machine_deployments[md.ref] = md
        for handler in self._md_handlers:
            handler(md.ref)
        for source_handler in self._source_handlers:
            source_handler()
        return md

    # -- the cache reads (not recorded) ----------------------------------------------------------------

    def unclaimed(self) -> builtins.list[LaunchedMachine]:
        return self._sorted(m for m in self.machines.values() if not m.nodeclaim)

    def claimed_by(self, nodeclaim: str) -> builtins.list[LaunchedMachine]:
        return self._sorted(m for m in self.machines.values() if nodeclaim and m.nodeclaim == nodeclaim)

    def with_provider_id(self, provider_id: str) -> builtins.list[LaunchedMachine]:
        return self._sorted(m for m in self.machines.values() if provider_id and m.provider_id == provider_id)

    def machine(self, ref: MachineRef) -> LaunchedMachine | None:
        return self.machines.get(ref)

    def machines_of(self, ref: MachineDeploymentRef) -> builtins.list[LaunchedMachine]:
        return self._sorted(
            m
            for m in self.machines.values()
            if (m.ref.namespace, m.machine_deployment) == (ref.namespace, ref.name)
        )

    def on_change(self, handler: Callable[[LaunchedMachine], None]) -> None:
        self._handlers.append(handler)

    def machine_deployment(self, ref: MachineDeploymentRef) -> MachineDeploymentInfo | None:
        return self.machine_deployments.get(ref)

    def on_machine_deployment_change(self, handler: Callable[[MachineDeploymentRef], None]) -> None:
        self._md_handlers.append(handler)

    def untainted_sources(self) -> builtins.list[str]:
        return builtins.list(self.untainted)

    def on_flavor_source_change(self, handler: Callable[[], None]) -> None:
        self._source_handlers.append(handler)

    def event_target(self, source: FlavorSource) -> Object | None:
        """An MD's ``event_target``; None for a worker class (the fake keeps no Cluster)."""
        md = self.machine_deployments.get(MachineDeploymentRef(source.namespace, source.name))
        return md.event_target if md is not None and source.kind == "MachineDeployment" else None

    async def drift(self, machine: MachineRef) -> str:
        return self.drifts.get(machine, "") if machine in self.machines else ""

    async def ensure_registration_taint(self, ref: MachineDeploymentRef) -> TemplateRevision:
        """The revision is ``<template>-tainted``; the MD then points at it and its taint is present."""
        self._record("ensure_registration_taint", ref)
        md = self.machine_deployments.get(ref)
        if md is None:
            raise NotFound(f"MachineDeployment {ref} does not exist")
        if md.paused:
            raise Paused(f"MachineDeployment {ref} or its Cluster is paused")
        revision = f"{md.bootstrap_template}-tainted"
        now = replace(md, registration_taint=RegistrationTaint.PRESENT, bootstrap_template=revision)
        self.machine_deployments[ref] = now
        self.untainted = [entry for entry in self.untainted if str(ref) not in entry]
        return TemplateRevision(now, md.bootstrap_template, revision, md.machines)

    @staticmethod
    def _sorted(machines: Iterable[LaunchedMachine]) -> builtins.list[LaunchedMachine]:
        return sorted(machines, key=lambda m: m.ref.name)


def _machine_object(ref: MachineRef) -> Object:
    """As much of a Machine as an Event's involved object needs."""
    meta = {"name": ref.name, "namespace": ref.namespace, "uid": f"fake-{ref.namespace}-{ref.name}"}
    return {"apiVersion": MACHINES.api_version, "kind": "Machine", "metadata": meta}
