"""Brakes on the sandbox's API server (issue 15): a NodePool with more than a fifth of its Nodes not Ready
keeps an empty node it would otherwise delete, and says why on its ``NodesHealthy`` condition; once the
unhealthy node's claim is on its way out, the pool is healthy again and the empty node goes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from loop_world import World, scenario

from controllers.controller_helpers import eventually, running, unique
from kapstan.api.wellknown import NODES_HEALTHY
from kapstan.controllers import conditions as cond
from kapstan.kube.clock import FakeClock
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS, NODES
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox


def test_an_unhealthy_pool_keeps_its_empty_node_until_it_recovers(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        idle, sick = unique("idle"), unique("sick")
        await w.claim(idle, node=await w.launched(idle), initialized=timedelta(minutes=5))
        await w.claim(sick)  # on a Node made here, which no kubelet keeps Ready
        not_ready = {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}
        await w.client.patch(NODES, f"node-{sick}", {"status": not_ready}, subresource="status")
        clock = FakeClock()
        disruption = w.disruption(clock)
        async with running(w.state):

            async def seen_not_ready() -> bool:
                node = w.state.nodes.store.get(f"node-{sick}")
                return node is not None and cond.find(node, "Ready") is not None

            await eventually("the NotReady Node in the cache", seen_not_ready)
            assert await disruption.reconcile() is False
            assert not await w.deleting(idle)
            pool = await w.client.get(NODEPOOLS, w.pool)
            found = cond.find(pool, NODES_HEALTHY) or {}
            assert (found.get("status"), found.get("reason")) == ("False", "UnhealthyNodes")
            assert f"1 of 2 Nodes not Ready (node-{sick})" in found.get("message", "")

            # The sick node's claim is being removed: it no longer counts, and the empty node may go.
            await w.client.delete(NODECLAIMS, sick)

            async def sick_deleting() -> bool:
                claim = w.state.node_claims.store.get(sick)
                return claim is not None and bool(claim["metadata"].get("deletionTimestamp"))

            await eventually("the deleting claim in the cache", sick_deleting)
            task = asyncio.ensure_future(disruption.reconcile())

            async def validating() -> bool:
                return clock.sleepers == 1

            await eventually("the decision to wait for the validation delay", validating)
            clock.advance(disruption.options.validation_delay)
            assert await task
        assert await w.deleting(idle)
        pool = await w.client.get(NODEPOOLS, w.pool)
        assert (cond.find(pool, NODES_HEALTHY) or {}).get("status") == "True"

    scenario(sandbox, body)
