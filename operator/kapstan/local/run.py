"""One kapstan run on the sandbox: a namespace, a Cluster, a NodePool, the operator, a timeline.

``KapstanRun`` sets up the objects of a scenario (``kapstan.local.article``), starts ``kapstan run`` as a
process, follows the timeline, and cleans up so the next run on the same sandbox starts from nothing:
workloads are deleted, the NodePool goes (its NodeClaims terminate through kapstan, which removes their
Machines), then the operator stops. The demo and the e2e tests use it.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kapstan.api.wellknown import NODEPOOL
from kapstan.capi import contract as c
from kapstan.install.crds import crds
from kapstan.kube.client import LEASES, Client
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODECLAIMS, NODECLASSES, NODEPOOLS, PODS
from kapstan.local import article
from kapstan.local.apply import apply, install_crds, resource_of
from kapstan.local.operator import OperatorProcess
from kapstan.local.sandbox import Sandbox
from kapstan.local.timeline import Timeline

_ids = itertools.count()


@dataclass
class KapstanRun:
    sandbox: Sandbox
    prefix: str = "run"
    on_entry: Callable[[float, str], None] = lambda seconds, text: None
    id: str = field(default_factory=lambda: f"{int(time.time()) % 100000}-{next(_ids)}")
    operators: list[OperatorProcess] = field(default_factory=list)
    workload: Client | None = None
    management: Client | None = None
    timeline: Timeline | None = None
    _follow: asyncio.Task[None] | None = None

    @property
    def namespace(self) -> str:
        return f"{self.prefix}-{self.id}"

    @property
    def cluster(self) -> str:
        return "capi-ovh"

    @property
    def pool(self) -> str:
        return f"{self.prefix}-{self.id}"

    async def connect(self) -> None:
        self.workload = await Client.connect(str(self.sandbox.workload_kubeconfig))
        self.management = await Client.connect(str(self.sandbox.management_kubeconfig))
        await install_crds(self.workload, crds())

    @property
    def clients(self) -> tuple[Client, Client]:
        assert self.workload is not None and self.management is not None, "call connect() first"
        return self.workload, self.management

    async def setup(
        self,
        management: list[dict[str, Any]],
        workload: list[dict[str, Any]],
        *,
        node_class: bool = True,
        disruption: dict[str, Any] | None = None,
    ) -> None:
        """Create the namespace on both sides, the Cluster's objects, the NodePool (and its NodeClass unless
        ``node_class`` is False; with ``disruption`` as its ``spec.disruption`` if given), start following
        the timeline, then create the workloads."""
        wl, mgmt = self.clients
        await apply(mgmt, [article.namespace(self.namespace)])
        if wl is not mgmt and self.sandbox.two_clusters:
            await apply(wl, [article.namespace(self.namespace)])
        await apply(mgmt, management)
        if node_class:
            await apply(wl, [article.node_class(self.pool)])
        await apply(wl, [article.node_pool(self.pool, self.pool, self.id, disruption=disruption)])
        self.timeline = Timeline(wl, mgmt, self.namespace, "app,app!=node-agent", self.pool, self.on_entry)
        self._follow = asyncio.ensure_future(self.timeline.follow())
        self.timeline.note("apply " + ", ".join(f"{o['kind']} {o['metadata']['name']}" for o in workload))
        await apply(wl, workload)

    @property
    def identities(self) -> dict[str, str]:
        """Leader-election identity (``host_pid``) to operator process name."""
        return {f"{socket.gethostname()}_{op.pid}": op.name for op in self.operators}

    async def lease_holder(self) -> str:
        wl, _ = self.clients
        try:
            lease = await wl.get(LEASES, f"kapstan-{self.id}", "kube-system")
        except ApiError as error:
            if error.not_found:
                return ""
            raise
        return str(lease.get("spec", {}).get("holderIdentity") or "")

    def start_operator(
        self, *extra_args: str, name: str | None = None, kubeconfig: Path | None = None
    ) -> OperatorProcess:
        """``kubeconfig``: the identity to run as on both sides (default: the sandbox's admin)."""
        operator = OperatorProcess(
            directory=Path(self.sandbox.directory),
            name=name or f"kapstan-{self.id}-{len(self.operators)}",
            cluster=f"{self.namespace}/{self.cluster}",
            workload_kubeconfig=kubeconfig or self.sandbox.workload_kubeconfig,
            management_kubeconfig=kubeconfig or self.sandbox.management_kubeconfig,
            lease=f"kapstan-{self.id}",
            extra_args=extra_args,
        ).start()
        self.operators.append(operator)
        return operator

    async def running_pods(self, app: str) -> int:
        wl, _ = self.clients
        found = await wl.request(
            "GET", PODS, namespace=self.namespace, params={"labelSelector": f"app={app}"}
        )
        return sum(1 for pod in found.get("items", []) if pod.get("status", {}).get("phase") == "Running")

    async def machines(self) -> list[dict[str, Any]]:
        _, mgmt = self.clients
        found = await mgmt.request("GET", c.MACHINES, namespace=self.namespace)
        return list(found.get("items", []))

    async def claims(self) -> list[dict[str, Any]]:
        wl, _ = self.clients
        found = await wl.request("GET", NODECLAIMS, params={"labelSelector": f"{NODEPOOL}={self.pool}"})
        return list(found.get("items", []))

    async def initialized_claims(self) -> int:
        """How many of the run's NodeClaims are Launched, Registered and Initialized. Wait for it rather than
        read it once the pods run: kube-scheduler may start them a moment before kapstan writes Initialized."""
        done = {"Launched", "Registered", "Initialized"}
        return sum(
            1
            for claim in await self.claims()
            if done
            <= {c["type"] for c in claim.get("status", {}).get("conditions", []) if c["status"] == "True"}
        )

    async def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 120.0) -> Any:
        """Await ``check()`` (a coroutine function) until truthy; fail naming ``what`` and the timeline."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = await check()
            except ApiError as error:
                if not error.transient:
                    raise
                last = f"{error}; asking again"
                await asyncio.sleep(0.5)
                continue
            if last:
                if self.timeline is not None:
                    await self._catch_up()
                return last
            await asyncio.sleep(0.5)
        raise AssertionError(
            f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})\n{self.report()}"
        )

    async def _catch_up(self) -> None:
        """Bring the timeline up to date; it only prints, so a transient answer leaves it for its loop."""
        assert self.timeline is not None
        try:
            await self.timeline.poll()
        except ApiError as error:
            if not error.transient:
                raise

    def report(self) -> str:
        lines = [f"T+{s:5.1f}s  {t}" for s, t in (self.timeline.entries if self.timeline else [])]
        for operator in self.operators:
            lines += [f"--- {operator.name} log ---", operator.log(60)]
        return "\n".join(lines)

    async def cleanup(self, timeout: float = 120.0) -> None:
        """Delete the workloads and the NodePool, wait for kapstan to terminate the claims, stop."""
        wl, _ = self.clients
        for kind, api_version in (("Deployment", "apps/v1"), ("DaemonSet", "apps/v1")):
            resource = await resource_of(wl, {"apiVersion": api_version, "kind": kind})
            for obj in (await wl.request("GET", resource, namespace=self.namespace)).get("items", []):
                await _ignore_missing(wl.delete(resource, obj["metadata"]["name"], self.namespace))
        await _ignore_missing(wl.delete(NODEPOOLS, self.pool))
        if any(operator.running for operator in self.operators):
            deadline = time.monotonic() + timeout
            while await self.claims() and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
        for operator in self.operators:
            operator.stop()
        for claim in await self.claims():  # the operator could not finish: do not leave them behind
            patch = {"metadata": {"finalizers": None}}
            await _ignore_missing(wl.patch(NODECLAIMS, claim["metadata"]["name"], patch))
        await _ignore_missing(wl.delete(NODECLASSES, self.pool))
        if self._follow is not None:
            self._follow.cancel()
            await asyncio.gather(self._follow, return_exceptions=True)


async def _ignore_missing(call: Any) -> None:
    try:
        await call
    except ApiError as error:
        if not error.not_found:
            raise
