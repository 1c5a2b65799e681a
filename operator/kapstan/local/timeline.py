"""A live timeline of what kapstan does, like the article's: ``T+2s NodeClaim created (c3-4)``.

It polls the API server (both sides of one Cluster) and reports each first sighting: NodeClaims and their
conditions, Machines, MD replicas and template changes, and how many of the watched pods run. The demo
prints it; the e2e tests print it and assert on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kapstan.api.wellknown import INITIALIZED, INSTANCE_TYPE, LAUNCHED, NODEPOOL, REGISTERED
from kapstan.capi import contract as c
from kapstan.kube.client import Client, Object
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODECLAIMS, PODS

CONDITIONS = (LAUNCHED, REGISTERED, INITIALIZED)
log = logging.getLogger(__name__)


@dataclass
class Timeline:
    workload: Client
    management: Client
    namespace: str
    """The Cluster's namespace (MDs, Machines) and the watched pods' namespace."""
    pod_selector: str
    nodepool: str
    on_entry: Callable[[float, str], None] = lambda seconds, text: None
    started: float = field(default_factory=time.monotonic)
    entries: list[tuple[float, str]] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    _replicas: dict[str, int] = field(default_factory=dict)
    _templates: dict[str, str] = field(default_factory=dict)
    _running: tuple[int, int] = (-1, -1)
    """The pods Running and the pods there were at the last note."""

    def note(self, text: str) -> None:
        seconds = time.monotonic() - self.started
        self.entries.append((seconds, text))
        self.on_entry(seconds, text)

    def texts(self) -> list[str]:
        return [text for _, text in self.entries]

    async def follow(self, every: float = 0.25) -> None:
        """Poll until cancelled."""
        while True:
            try:
                await self.poll()
            except ApiError as error:
                # A just-installed CRD can answer 404 for a moment, a server can blip: keep following.
                log.debug("timeline poll failed: %s", error)
            await asyncio.sleep(every)

    async def poll(self) -> None:
        await self._claims()
        await self._deployments()
        await self._machines()
        await self._pods()

    async def _claims(self) -> None:
        claims = await self._list(self.workload, NODECLAIMS, None, f"{NODEPOOL}={self.nodepool}")
        for claim in claims:
            name = claim["metadata"]["name"]
            flavor = claim["metadata"].get("labels", {}).get(INSTANCE_TYPE, "?")
            self._once(f"claim/{name}", f"NodeClaim {name} created ({flavor})")
            for kind in CONDITIONS:
                if _condition_true(claim, kind):
                    node = claim.get("status", {}).get("nodeName", "")
                    detail = f" (node {node})" if kind != LAUNCHED and node else ""
                    self._once(f"claim/{name}/{kind}", f"NodeClaim {name} {kind}{detail}")
            if claim["metadata"].get("deletionTimestamp"):
                self._once(f"claim/{name}/deleting", f"NodeClaim {name} deleting")

    async def _deployments(self) -> None:
        for md in await self._list(self.management, c.MACHINEDEPLOYMENTS, self.namespace, None):
            name = c.name(md)
            replicas = c.replicas(md)
            before = self._replicas.get(name)
            if before is not None and before != replicas:
                self.note(f"MachineDeployment {name} replicas {before} -> {replicas}")
            self._replicas[name] = replicas
            ref = md["spec"]["template"]["spec"].get("bootstrap", {}).get("configRef", {}).get("name", "")
            old = self._templates.get(name)
            if old is not None and old != ref:
                self.note(f"MachineDeployment {name} bootstrap template {old} -> {ref}")
            self._templates[name] = ref

    async def _machines(self) -> None:
        for machine in await self._list(self.management, c.MACHINES, self.namespace, None):
            name = c.name(machine)
            md = c.labels_of(machine).get(c.DEPLOYMENT_NAME_LABEL, "?")
            self._once(f"machine/{name}", f"Machine {name} created (MachineDeployment {md})")
            node = machine.get("status", {}).get("nodeRef", {}).get("name")
            if node:
                self._once(f"machine/{name}/node", f"Node {node} joined (Machine {name})")

    async def _pods(self) -> None:
        pods = await self._list(self.workload, PODS, self.namespace, self.pod_selector)
        running = sum(1 for pod in pods if pod.get("status", {}).get("phase") == "Running")
        # A change of either count is noted: a pod replaced (three for a moment where two are wanted)
        # would otherwise leave "2/3" as the last word while the fleet is back at 2/2.
        if (running, len(pods)) != self._running and pods:
            self.note(f"pods Running {running}/{len(pods)}")
            self._running = (running, len(pods))

    def _once(self, key: str, text: str) -> None:
        if key not in self._seen:
            self._seen.add(key)
            self.note(text)

    @staticmethod
    async def _list(
        client: Client, resource: Any, namespace: str | None, selector: str | None
    ) -> list[Object]:
        params = {"labelSelector": selector} if selector else None
        found = await client.request("GET", resource, namespace=namespace, params=params)
        return sorted(found.get("items", []), key=lambda o: o["metadata"]["name"])


def _condition_true(obj: Object, kind: str) -> bool:
    return any(
        cond.get("type") == kind and cond.get("status") == "True"
        for cond in obj.get("status", {}).get("conditions") or []
    )


def format_entry(seconds: float, text: str) -> str:
    return f"T+{seconds:5.1f}s  {text}"
