"""An in-memory ``CloudProvider`` for unit tests of the controllers (docs/architecture.md#one-seam-to-capi).

It keeps the contract the real provider keeps (a NodeClaim gets one Machine however often ``create`` is
retried; ``delete`` is idempotent) and records every call, so a test can assert what a controller asked
for; ``fail_next`` makes the next call of a method raise a typed error instead.
"""

from __future__ import annotations

import builtins
import itertools
from collections import defaultdict, deque
from dataclasses import dataclass, field, replace
from typing import Literal

from kapstan.capi.provider import (
    CloudProvider,
    LaunchedMachine,
    LaunchRequest,
    MachineRef,
    NotFound,
    ProviderError,
)

Method = Literal["create", "delete", "trim", "get", "list"]


@dataclass
class Call:
    method: Method
    argument: LaunchRequest | MachineRef | tuple[str, str]


@dataclass
class FakeProvider(CloudProvider):
    """Machines are named ``<source name>-<n>`` with providerID ``fake://<name>``."""

    calls: builtins.list[Call] = field(default_factory=builtins.list)
    machines: dict[MachineRef, LaunchedMachine] = field(default_factory=dict)
    _clusters: dict[MachineRef, tuple[str, str]] = field(default_factory=dict)
    _failures: defaultdict[Method, deque[ProviderError]] = field(default_factory=lambda: defaultdict(deque))
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def fail_next(self, method: Method, error: ProviderError) -> None:
        """Make the next call of ``method`` raise ``error`` (queued: two calls fail twice)."""
        self._failures[method].append(error)

    def _record(self, method: Method, argument: LaunchRequest | MachineRef | tuple[str, str]) -> None:
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
        machine = LaunchedMachine(ref, request.nodeclaim, source.name, provider_id=f"fake://{name}")
        self.machines[ref] = machine
        self._clusters[ref] = (source.namespace, source.cluster)
        return machine

    async def delete(self, machine: MachineRef, *, claimed_by: str | None = None) -> None:
        self._record("delete", machine)
        if machine in self.machines and claimed_by not in (None, self.machines[machine].nodeclaim):
            return  # claimed since the caller looked
        if machine in self.machines:
            self.machines[machine] = replace(self.machines[machine], deleting=True)

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

    def remove(self, machine: MachineRef) -> None:
        """What CAPI does after ``delete``: the Machine goes away."""
        self.machines.pop(machine, None)
        self._clusters.pop(machine, None)
