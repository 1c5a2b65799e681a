"""The NodePool status controller publishes the pool's NodeClaims by lifecycle state
(``kapstan_nodeclaims{nodepool, state}``, the dashboard's "NodeClaims by state"): each claim counts once,
at the first of Launched, Registered, Initialized not yet True, or as deleting; a state with no claims
reads 0, and the series go with the NodePool."""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import POOL, World, world
from kapstan.api.wellknown import INITIALIZED, LAUNCHED, REGISTERED
from kapstan.controllers.status import NodePoolStatus
from kapstan.kube.kinds import NODECLAIMS
from kapstan.observability import metrics


def _claim_with(w: World, *true: str) -> str:
    """A NodeClaim of the pool whose conditions ``true`` are True and the others absent."""
    claim = asyncio.run(w.claim("c3-4"))
    conditions = [{"type": kind, "status": "True", "reason": kind} for kind in true]
    w.api.put(NODECLAIMS, {**claim, "status": {"conditions": conditions}})
    return str(claim["metadata"]["name"])


def _by_state(w: World) -> dict[str, float | None]:
    asyncio.run(NodePoolStatus(w.state, w.provider, w.events, clock=w.clock).reconcile(POOL))
    return {
        state: metrics.value("kapstan_nodeclaims", {"nodepool": POOL, "state": state})
        for state in metrics.NODECLAIM_STATES
    }


def test_each_nodeclaim_counts_once_in_its_lifecycle_state() -> None:
    w = world()
    launching = _claim_with(w)
    _claim_with(w, LAUNCHED)
    _claim_with(w, LAUNCHED, REGISTERED)
    _claim_with(w, LAUNCHED, REGISTERED, INITIALIZED)
    _claim_with(w, LAUNCHED, REGISTERED, INITIALIZED)
    deleting = _claim_with(w, LAUNCHED, REGISTERED, INITIALIZED)
    asyncio.run(w.api.delete(NODECLAIMS, deleting))  # the termination finalizer keeps it, deleting
    assert _by_state(w) == {
        "launching": 1,
        "registering": 1,
        "initializing": 1,
        "initialized": 2,
        "deleting": 1,
    }

    # The launching claim launched and the deleting one is gone: both counts follow, to 0.
    claim = w.claim_now(launching)
    w.api.put(NODECLAIMS, {**claim, "status": {"conditions": [{"type": LAUNCHED, "status": "True"}]}})
    gone = w.claim_now(deleting)
    w.state.node_claims.store.delete(gone)
    assert _by_state(w) == {
        "launching": 0,
        "registering": 2,
        "initializing": 1,
        "initialized": 2,
        "deleting": 0,
    }

    pool = w.state.node_pools.store.get(POOL)
    assert pool is not None
    w.state.node_pools.store.delete(pool)
    assert set(_by_state(w).values()) == {None}
