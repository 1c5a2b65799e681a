"""Scenario 5: the kube-apiserver killed and restarted during a 50-pod scale-up. kapstan resyncs (a
NodePool created after the restart gets its status from kapstan within 30 s), keeps running (no crash, no
restart of its process) and ends where a clean run of the same scale-up ends: the same Machines, all
claimed, every pod Running."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import pytest

from chaos.chaos_helpers import figure, leaks, running_pods, seconds_until
from chaos.report import record
from e2e.e2e_helpers import E2E, harness
from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND
from kapstan.controllers import conditions as cond
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODEPOOLS
from kapstan.local import Sandbox, article

pytestmark = [pytest.mark.sandbox, pytest.mark.chaos]

PODS = 50
RESYNC = 30.0
"""The issue's bar: seconds from the API server answering again to kapstan acting on what changed."""
SCALE_UP = 420.0
SETTLE = 180.0


@dataclass
class ScaleUp:
    running: float | None
    """Seconds from the first NodeClaim (or the restart) until every pod was Running."""
    machines: int
    leaks: list[str]
    alive: bool
    """The one operator process kept running all along."""
    away: float = 0.0
    """Seconds the API server was gone (0 in the clean run)."""
    resync: float | None = None


def _scale_up(e2e: E2E, sandbox: Sandbox | None) -> ScaleUp:
    """50 pods of 900m on c3-16 nodes (8 a node, whatever the batches: one flavor, one shape); with
    ``sandbox``, its API server is restarted once the first NodeClaim exists."""
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-16"}, boot_delay_seconds=5),
            [article.deployment("inflate", ns, run.id, PODS, "900m")],
        )
    )
    operator = run.start_operator()

    async def claimed() -> bool:
        return len(await run.claims()) >= 1

    e2e(run.wait_for("the first NodeClaim", claimed, 180))
    away, resync = 0.0, None
    if sandbox is not None:
        away = sandbox.restart_apiserver(down_for=5.0)
        resync = _resync(e2e)

    async def all_running() -> bool:
        return len(await running_pods(run, "inflate")) == PODS

    running = e2e(seconds_until(all_running, SCALE_UP))

    async def clean() -> bool:
        return not await leaks(run)

    e2e(seconds_until(clean, SETTLE))
    left = e2e(leaks(run))
    machines = len(e2e(run.machines()))
    return ScaleUp(running, machines, left, operator.running and len(run.operators) == 1, away, resync)


def _resync(e2e: E2E) -> float | None:
    """Seconds until kapstan writes the status of a NodePool created after the API server came back: its
    informers listed or watched again and its controllers act on what they see."""
    wl, _ = e2e.run.clients
    name = f"probe-{e2e.run.id}"
    ref = {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": f"absent-{e2e.run.id}"}
    probe = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": []}}},
    }
    started = time.monotonic()

    async def created() -> bool:
        try:
            await wl.create(NODEPOOLS, probe)  # a 429 or 503 of the server warming up is asked again
        except ApiError as error:
            if error.not_found:
                return False  # a restarted server serves its CRDs' resources a moment after /readyz
            if not error.conflict:  # 409: an earlier attempt went through after all
                raise
        return True

    async def written() -> bool:
        try:
            return cond.find(await wl.get(NODEPOOLS, name), "NodeClassReady") is not None
        except ApiError as error:
            if error.not_found:
                return False
            raise

    try:
        e2e(e2e.run.wait_for("the probe NodePool created", created, RESYNC))
        seconds = e2e(seconds_until(written, RESYNC + 60))
        return None if seconds is None else time.monotonic() - started
    finally:
        with contextlib.suppress(ApiError):
            e2e(wl.delete(NODEPOOLS, name))


def test_an_api_server_restart_mid_scale_up_resyncs_and_ends_as_a_clean_run(
    chaos: E2E, sandbox: Sandbox, request: pytest.FixtureRequest
) -> None:
    with contextlib.contextmanager(harness)(sandbox, request) as clean_run:
        clean = _scale_up(clean_run, None)
    hit = _scale_up(chaos, sandbox)
    resynced = hit.resync is not None and hit.resync <= RESYNC
    same = hit.machines == clean.machines
    passed = resynced and hit.running is not None and same and not hit.leaks and hit.alive
    record(
        "kube-apiserver restarted during a 50-pod scale-up",
        "kapstan resyncs within 30 s, keeps running (no crash), ends with the Machines of a clean run, "
        "all claimed, all pods Running",
        f"API server away {hit.away:.0f} s; resync {figure(hit.resync, RESYNC + 60)}; all Running after "
        f"{figure(hit.running, SCALE_UP)} (clean run: {figure(clean.running, SCALE_UP)}); {hit.machines} "
        f"Machines ({clean.machines} in the clean run); operator {'kept running' if hit.alive else 'exited'}; "
        f"{'; '.join(hit.leaks) or 'no leak'}",
        passed,
    )
    assert clean.running is not None and not clean.leaks, f"the clean run did not settle: {clean}"
    assert resynced, f"resync took {figure(hit.resync, RESYNC + 60)}"
    assert hit.running is not None, "not every pod Running after the restart"
    assert same, f"{hit.machines} Machines after the restart, {clean.machines} in a clean run"
    assert not hit.leaks
    assert hit.alive, "the operator exited"
