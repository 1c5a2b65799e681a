"""The writes disruption makes to NodeClaims and Nodes, shared by expiration and the orchestration of
commands: delete a claim (once), annotate it, taint and untaint its Node."""

from __future__ import annotations

from kapstan.api.wellknown import DISRUPTED_TAINT_KEY
from kapstan.controllers.state import ClusterState
from kapstan.controllers.taints import mark_disrupted, patch_taints, taints_of
from kapstan.kube.client import Object
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODECLAIMS, NODES
from kapstan.kube.meta import Meta

UNTAINT_ATTEMPTS = 3
"""How many times an untaint reads the Node afresh while other writers keep changing its taints."""


class ClaimWrites:
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.deleted: dict[str, str] = {}
        """Claims this process asked to delete, by uid: the cache may not show their deletionTimestamp
        yet, and a second delete would count the same disruption twice."""

    def forget_gone(self, claims: dict[str, Object]) -> None:
        """Drop the claims that no longer exist from ``deleted``."""
        self.deleted = {name: uid for name, uid in self.deleted.items() if name in claims}

    def going(self, claim: Object) -> bool:
        meta = Meta.of(claim)
        return meta.deleting or self.deleted.get(meta.name) == meta.uid

    async def delete(self, claim: Object) -> bool:
        """Delete the claim (its finalizer drains it and removes its Machine); False if it was gone."""
        meta = Meta.of(claim)
        self.deleted[meta.name] = meta.uid
        try:
            await self.state.workload.delete(NODECLAIMS, meta.name)
        except ApiError as error:
            if not error.not_found:
                raise
            return False
        return True

    async def annotate(self, name: str, annotations: dict[str, str | None]) -> None:
        try:
            await self.state.workload.patch(NODECLAIMS, name, {"metadata": {"annotations": annotations}})
        except ApiError as error:
            if not error.not_found:
                raise

    async def taint(self, node: Object) -> bool:
        """Put ``karpenter.sh/disrupted`` on; False if the Node's taints changed since read."""
        return await mark_disrupted(self.state.workload, node)

    async def untaint(self, node: Object) -> None:
        """Remove ``karpenter.sh/disrupted``, read fresh (the cache may not show the taint yet), testing the
        taint list it replaces so another writer's taint since the read is not undone."""
        for _ in range(UNTAINT_ATTEMPTS):
            try:
                fresh = await self.state.workload.get(NODES, Meta.of(node).name)
            except ApiError as error:
                if error.not_found:
                    return
                raise
            taints = [t for t in taints_of(fresh) if t.get("key") != DISRUPTED_TAINT_KEY]
            if len(taints) == len(taints_of(fresh)) or await patch_taints(self.state.workload, fresh, taints):
                return
