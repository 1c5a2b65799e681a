"""One NodePool condition written by a controller other than the NodePool status controller.

The lifecycle (``NodeRegistrationHealthy``, ``OfferingsAvailable``) and the disruption loop
(``NodesHealthy``) each own one condition of a pool whose other conditions the status controller writes.
So the write reads the pool, sets that one condition, and replaces the condition list with a JSON patch
that tests the list it read, retried when the test fails; nothing is written when the cached pool already
says the same. Conditional on the pool's resourceVersion instead, any write since the read refused it,
such as the status controller's of ``status.resources`` (one per NodeClaim in a scale-up; 11 to 14 409s
on nodepools/status a bench.live run); a condition written meanwhile still refuses it, so none is lost.
"""

from __future__ import annotations

from datetime import datetime

from kapstan.controllers import conditions as cond
from kapstan.controllers.state import ClusterState
from kapstan.kube.errors import ApiError
from kapstan.kube.jsonpatch import patch_if_unchanged
from kapstan.kube.kinds import NODEPOOLS
from kapstan.kube.meta import Meta

ATTEMPTS = 3


async def set_pool_condition(
    state: ClusterState,
    pool_name: str,
    kind: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> None:
    """Set condition ``kind`` of NodePool ``pool_name``; a pool that is gone is left alone."""
    cached = state.node_pools.store.get(pool_name)
    existing = cond.find(cached, kind) if cached else None
    said = (existing.get("status"), existing.get("reason"), existing.get("message", "")) if existing else None
    if cached is None or said == (status, reason, message):
        return
    for _ in range(ATTEMPTS):
        try:
            pool = await state.workload.get(NODEPOOLS, pool_name)
        except ApiError as error:
            if error.not_found:
                return
            raise
        meta = Meta.of(pool)
        conditions = cond.with_condition(
            cond.conditions_of(pool), kind, status, reason, message, meta.generation, now=now
        )
        patch = cond.status_patch(pool, {"conditions": conditions})
        if (
            await patch_if_unchanged(state.workload, NODEPOOLS, pool_name, patch, subresource="status")
            is not None
        ):
            return
