"""Scenario 4: a hostile controller taints every new Node ``NoExecute`` (as a misconfigured node problem
detector or policy engine would), so no pod ever runs on what kapstan launches. kapstan must not launch a
storm: Karpenter's own bar is under 35 nodes in 5 minutes, ours at most 10."""

from __future__ import annotations

import asyncio
import time

import pytest

from chaos.chaos_helpers import running_pods
from chaos.report import record
from e2e.e2e_helpers import E2E
from kapstan.capi import contract as c
from kapstan.kube.client import Client
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODES
from kapstan.local import article

pytestmark = [pytest.mark.sandbox, pytest.mark.chaos]

WINDOW = 300.0
LAUNCHES = 10
HOSTILE = {"key": "chaos.kapstan.dev/hostile", "value": "true", "effect": "NoExecute"}


async def _taint_new_nodes(wl: Client, before: set[str], tainted: set[str]) -> None:
    """The hostile controller: every half second, taint each Node that was not there at the start."""
    while True:
        try:
            nodes = (await wl.request("GET", NODES)).get("items", [])
        except ApiError as error:
            if not error.transient:
                raise
            nodes = []
        for node in nodes:
            name = node["metadata"]["name"]
            taints = node.get("spec", {}).get("taints") or []
            if name in before or any(t.get("key") == HOSTILE["key"] for t in taints):
                continue
            patch = {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": [*taints, HOSTILE]},
            }
            try:
                await wl.patch(NODES, name, patch)
                tainted.add(name)
            except ApiError as error:
                if not (error.conflict or error.not_found or error.transient):
                    raise  # a 409 (kapstan or the node lifecycle wrote it first) is tried next round
        await asyncio.sleep(0.5)


async def _watch_launches(e2e: E2E, machines: set[str], claims: set[str], most: list[int]) -> None:
    """Every second, the Machines and NodeClaims that exist, and the most Machines alive at once."""
    run = e2e.run
    deadline = time.monotonic() + WINDOW
    while time.monotonic() < deadline:
        try:
            alive = {c.name(m) for m in await run.machines()}
            claims |= {claim["metadata"]["name"] for claim in await run.claims()}
        except ApiError as error:
            if not error.transient:
                raise
            alive = set()
        machines |= alive
        most[0] = max(most[0], len(alive))
        await asyncio.sleep(1.0)


def test_a_controller_tainting_every_new_node_gets_at_most_10_launches_in_5_minutes(chaos: E2E) -> None:
    run = chaos.run
    ns = run.namespace
    wl, _ = run.clients
    before = {n["metadata"]["name"] for n in chaos(wl.request("GET", NODES)).get("items", [])}
    chaos(
        run.setup(
            article.standalone(ns, run.cluster, {"pool": "c3-8"}),
            [article.deployment("inflate", ns, run.id, 2, "1")],
        )
    )
    machines: set[str] = set()
    claims: set[str] = set()
    tainted: set[str] = set()
    most = [0]
    run.start_operator()

    async def chaos_window() -> None:
        hostile = asyncio.ensure_future(_taint_new_nodes(wl, before, tainted))
        try:
            await _watch_launches(chaos, machines, claims, most)
        finally:
            hostile.cancel()
            await asyncio.gather(hostile, return_exceptions=True)

    chaos(chaos_window())
    ran = len(chaos(running_pods(run, "inflate")))
    # The scenario must have happened: kapstan launched and the hostile controller tainted what came.
    passed = bool(tainted) and len(machines) <= LAUNCHES
    record(
        "A controller taints every new Node NoExecute",
        f"nodes launched in {WINDOW / 60:.0f} minutes: at most {LAUNCHES} (Karpenter's bar: under 35)",
        f"{len(machines)} Machines for {len(claims)} NodeClaims in {WINDOW:.0f} s, at most {most[0]} at once; "
        f"{len(tainted)} Nodes tainted; {ran} of 2 pods Running",
        passed,
    )
    assert tainted, f"no Node came to taint: nothing was launched\n{run.report()}"
    assert passed, f"{len(machines)} Machines launched in {WINDOW:.0f} s: {sorted(machines)}\n{run.report()}"
