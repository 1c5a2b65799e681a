"""What the disruption e2e tests share (test_disruption.py, test_disruption_consolidation.py,
test_disruption_blocks.py): reading the run's pods, MD replicas and metrics, the manifests they add (a PDB,
a price, one pod per node), and a watch that keeps the fewest Ready pods of an app."""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any

from kapstan.capi import contract as c
from kapstan.kube.client import Resource
from kapstan.kube.informer import Informer
from kapstan.kube.kinds import PODS
from kapstan.kube.store import Event
from kapstan.local.run import KapstanRun

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")


async def live_pods(run: KapstanRun, app: str) -> list[dict[str, Any]]:
    """The pods of ``app`` in the run's namespace, those being deleted left out."""
    wl, _ = run.clients
    found = await wl.request("GET", PODS, namespace=run.namespace, params={"labelSelector": f"app={app}"})
    return [p for p in found.get("items", []) if not p["metadata"].get("deletionTimestamp")]


async def md_replicas(run: KapstanRun, md: str) -> int:
    """The replicas MachineDeployment ``md`` asks for now."""
    return c.replicas(await run.clients[1].get(c.MACHINEDEPLOYMENTS, md, run.namespace))


def one_per_node(deployment: dict[str, Any], group: str) -> dict[str, Any]:
    """One pod per node across every deployment of ``group`` (required anti-affinity on a shared label)."""
    template = deployment["spec"]["template"]
    template["metadata"]["labels"]["group"] = group
    template["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"group": group}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    return deployment


def scrape_metrics(run: KapstanRun) -> str:
    """The newest operator's /metrics exposition."""
    port = run.operators[-1].metrics_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as scraped:
        return str(scraped.read().decode())


class ReadyWatch:
    """Watches the pods of ``app`` and keeps the fewest Ready ones seen at any event."""

    def __init__(self, run: KapstanRun, app: str) -> None:
        self.informer = Informer(run.clients[0], PODS, namespace=run.namespace, label_selector=f"app={app}")
        self.informer.add_handler(self._on_event)
        self.fewest: int | None = None
        self.task: asyncio.Task[None] | None = None

    def _on_event(self, _: Event) -> None:
        if not self.informer.has_synced:
            return
        ready = sum(
            1
            for pod in self.informer.store.objects()
            if not pod["metadata"].get("deletionTimestamp")
            and any(
                cond.get("type") == "Ready" and cond.get("status") == "True"
                for cond in pod.get("status", {}).get("conditions") or []
            )
        )
        self.fewest = ready if self.fewest is None else min(self.fewest, ready)

    async def start(self) -> None:
        self.task = asyncio.ensure_future(self.informer.run())
        await self.informer.wait_synced()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


def pdb(name: str, ns: str, app: str, min_available: int) -> dict[str, Any]:
    """A PodDisruptionBudget keeping ``min_available`` pods of ``app``."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


def priced(manifests: list[dict[str, Any]], price: str) -> list[dict[str, Any]]:
    """``manifests`` with every MachineDeployment priced at ``price`` per hour."""
    for obj in manifests:
        if obj["kind"] == "MachineDeployment":
            obj["metadata"]["annotations"]["kapstan.io/price-per-hour"] = price
    return manifests


UNDERUTILIZED = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "10s"}
"""A NodePool's disruption block that consolidates under-used nodes 10 s after they become so."""
