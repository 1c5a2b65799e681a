"""What the chaos scenarios measure: how long until a check holds, and whether every managed MD's replicas
equal its Machines with each Machine claimed (no leaked replica, no paid node nobody owns)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kapstan.api.wellknown import MACHINE_ANNOTATION, NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODES, PODS
from kapstan.local.run import KapstanRun


async def seconds_until(check: Callable[[], Awaitable[bool]], timeout: float) -> float | None:
    """Seconds until ``check()`` holds, polled every half second; None if it did not within ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if await check():
                return time.monotonic() - start
        except ApiError as error:
            if not error.transient:
                raise  # a loaded or restarting server's 429, 5xx or silence is asked again
        await asyncio.sleep(0.5)
    return None


def figure(seconds: float | None, timeout: float) -> str:
    return f"{seconds:.0f} s" if seconds is not None else f"not within {timeout:.0f} s"


async def running_pods(run: KapstanRun, app: str) -> list[dict[str, Any]]:
    wl, _ = run.clients
    found = await wl.request("GET", PODS, namespace=run.namespace, params={"labelSelector": f"app={app}"})
    return [pod for pod in found.get("items", []) if pod.get("status", {}).get("phase") == "Running"]


async def node_exists(run: KapstanRun, name: str) -> bool:
    wl, _ = run.clients
    try:
        await wl.get(NODES, name)
    except ApiError as error:
        if error.not_found:
            return False
        raise
    return True


def machine_of(claim: dict[str, Any]) -> str:
    """The name of the Machine a launched claim records (``namespace/name``)."""
    return str(claim["metadata"]["annotations"][MACHINE_ANNOTATION]).partition("/")[2]


async def leaks(run: KapstanRun) -> list[str]:
    """What is wrong with the run's MDs: replicas that are not Machines, Machines no NodeClaim claims,
    claims naming a Machine that is gone. Empty when the cluster is as kapstan should leave it."""
    _, mgmt = run.clients
    machines = await run.machines()
    claims = {claim["metadata"]["name"] for claim in await run.claims()}
    found = []
    for md in (await mgmt.request("GET", c.MACHINEDEPLOYMENTS, namespace=run.namespace)).get("items", []):
        mine = [m for m in machines if c.labels_of(m).get(c.DEPLOYMENT_NAME_LABEL) == c.name(md)]
        if c.replicas(md) != len(mine):
            found.append(f"MD {c.name(md)}: {c.replicas(md)} replicas, {len(mine)} Machines")
        for machine in mine:
            owner = c.annotations_of(machine).get(NODECLAIM_ANNOTATION)
            if owner not in claims:
                found.append(f"Machine {c.name(machine)} is claimed by {owner or 'nobody'}")
    return found
