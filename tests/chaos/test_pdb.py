"""Scenario 6: a PodDisruptionBudget is never violated while kapstan consolidates, replaces drifted nodes
and expires nodes. Sampled every second: the pods of the budget's Deployment that are Ready (and not
terminating) never fall below what the budget asks (replicas - maxUnavailable)."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from chaos.report import record
from e2e.e2e_helpers import E2E
from kapstan.kube.client import Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODEPOOLS, PODS
from kapstan.local import article
from kapstan.local.operator import OperatorProcess
from kapstan.local.run import KapstanRun

pytestmark = [pytest.mark.sandbox, pytest.mark.chaos]

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
PHASE = 300.0
"""Seconds each disruption (consolidation, drift, expiration) gets to happen and settle."""
_DISRUPTED = re.compile(r"^karpenter_nodeclaims_disrupted_total\{([^}]*)\} (\S+)$", re.M)


@dataclass
class Samples:
    taken: int = 0
    violations: list[str] = field(default_factory=list)
    missed: int = 0
    """Samples the API server did not answer (a 429 under load), counted rather than guessed."""
    least_margin: int | None = None
    """The fewest Ready pods above what the budget asks, over every sample."""


def _pdb(ns: str) -> dict[str, object]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }


def _healthy(pod: dict[str, object]) -> bool:
    """Counted as the disruption controller counts a budget's healthy pods: Ready, not terminating."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    assert isinstance(meta, dict) and isinstance(status, dict)
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return ready and not meta.get("deletionTimestamp")


async def _sample(run: KapstanRun, samples: Samples, stop: asyncio.Event) -> None:
    """Every second: the Deployment's replicas and its healthy pods, read one after the other."""
    wl, _ = run.clients
    while not stop.is_set():
        try:
            replicas = (await wl.get(DEPLOYMENTS, "web", run.namespace))["spec"]["replicas"]
            params = {"labelSelector": "app=web"}
            pods = (await wl.request("GET", PODS, namespace=run.namespace, params=params)).get("items", [])
        except ApiError as error:
            if not error.transient:
                raise
            samples.missed += 1
            await asyncio.sleep(1.0)
            continue
        margin = sum(1 for pod in pods if _healthy(pod)) - (replicas - 1)
        samples.taken += 1
        samples.least_margin = margin if samples.least_margin is None else min(samples.least_margin, margin)
        if margin < 0:
            samples.violations.append(
                f"{time.strftime('%H:%M:%S')}: {replicas - 1 + margin} of {replicas} Ready"
            )
        await asyncio.sleep(1.0)


def _disrupted(operator: OperatorProcess, pool: str) -> dict[str, int]:
    """``karpenter_nodeclaims_disrupted_total`` of ``pool`` by reason, from the operator's /metrics."""
    url = f"http://127.0.0.1:{operator.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    found: dict[str, int] = {}
    for labels, value in _DISRUPTED.findall(text):
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if pairs.get("nodepool") == pool:
            found[pairs["reason"]] = found.get(pairs["reason"], 0) + int(float(value))
    return found


async def _settled(run: KapstanRun, operator: OperatorProcess, reasons: tuple[str, ...], since: int) -> bool:
    """A disruption for one of ``reasons`` happened (beyond ``since``) and every web pod is Ready again."""
    counts = await asyncio.to_thread(_disrupted, operator, run.pool)
    if sum(counts.get(reason, 0) for reason in reasons) <= since:
        return False
    wl, _ = run.clients
    deployment = await wl.get(DEPLOYMENTS, "web", run.namespace)
    pods = await wl.request("GET", PODS, namespace=run.namespace, params={"labelSelector": "app=web"})
    return bool(sum(1 for pod in pods.get("items", []) if _healthy(pod)) == deployment["spec"]["replicas"])


def test_a_pod_disruption_budget_holds_through_consolidation_drift_and_expiration(chaos: E2E) -> None:
    run = chaos.run
    ns = run.namespace
    wl, _ = run.clients
    disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "10s"}
    chaos(
        run.setup(
            article.standalone(ns, run.cluster, {"small": "c3-4", "medium": "c3-8", "large": "c3-16"}),
            [_pdb(ns), article.deployment("web", ns, run.id, 4, "1")],
            disruption=disruption,
        )
    )
    operator = run.start_operator()

    async def all_ready(count: int) -> bool:
        pods = await wl.request("GET", PODS, namespace=ns, params={"labelSelector": "app=web"})
        return sum(1 for pod in pods.get("items", []) if _healthy(pod)) == count

    chaos(run.wait_for("4 web pods Ready", lambda: all_ready(4), 240))
    # Half the pods go: the nodes are underused, consolidation has something to do.
    chaos(wl.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 2}}, namespace=ns))
    chaos(run.wait_for("2 web pods Ready", lambda: all_ready(2), 60))

    samples = Samples()
    phases: dict[str, float | None] = {}

    async def phase(name: str, reasons: tuple[str, ...], change: Mapping[str, object] | None) -> None:
        before = await asyncio.to_thread(_disrupted, operator, run.pool)
        since = sum(before.get(reason, 0) for reason in reasons)
        if change is not None:
            await wl.patch(NODEPOOLS, run.pool, dict(change))
        started = time.monotonic()
        while time.monotonic() - started < PHASE:
            try:
                if await _settled(run, operator, reasons, since):
                    phases[name] = time.monotonic() - started
                    return
            except ApiError as error:
                if not error.transient:
                    raise
            await asyncio.sleep(1.0)
        phases[name] = None

    async def scenario() -> None:
        stop = asyncio.Event()
        sampler = asyncio.ensure_future(_sample(run, samples, stop))
        try:
            await phase("consolidation", ("empty", "underutilized"), None)
            drift = {"spec": {"template": {"metadata": {"labels": {"chaos.kapstan.dev/drift": "1"}}}}}
            await phase("drift", ("drifted",), drift)
            await phase("expiration", ("expired",), {"spec": {"template": {"spec": {"expireAfter": "90s"}}}})
        finally:
            stop.set()
            await asyncio.gather(sampler, return_exceptions=True)
            # No more expirations while the run is cleaned up.
            never = {"spec": {"template": {"spec": {"expireAfter": "Never"}}}}
            await wl.patch(NODEPOOLS, run.pool, never)

    chaos(scenario())
    counts = _disrupted(operator, run.pool)
    done = [name for name, seconds in phases.items() if seconds is not None]
    passed = not samples.violations and len(done) == 3
    record(
        "PodDisruptionBudget during consolidation, drift and expiration",
        "Ready pods never below replicas - maxUnavailable (sampled every second), each disruption happened",
        f"{len(samples.violations)} violations in {samples.taken} samples ({samples.missed} unanswered, least margin "
        f"{samples.least_margin}); "
        + ", ".join(
            f"{name} {seconds:.0f} s" if seconds is not None else f"{name} not within {PHASE:.0f} s"
            for name, seconds in phases.items()
        )
        + f"; disrupted {dict(sorted(counts.items()))}",
        passed,
    )
    assert not samples.violations, f"the budget was violated: {samples.violations[:5]}\n{run.report()}"
    assert len(done) == 3, f"not every disruption happened: {phases} {counts}\n{run.report()}"
