"""Karpenter's rule: no voluntary disruption of a NodePool while it has pods pending for provisioning.

Karpenter's disruption simulation schedules the pending pods together with the candidates' pods, so a
pool whose pending pods need a new node gets no delete (the pods take the room the candidates' pods were
to use) and a replacement that is priced with the pending pods' nodes in it; and a plan that leans on a
node not Initialized yet is refused. kapstan says the same in one place: a pool the pending pods would
open a NodeClaim in is still provisioning, and is left alone until the provisioner has placed them (the
claims it creates are then not Initialized, which halts the pool too, ``observe.py``). Pods that no pool
can take do not halt anything (Karpenter: a pod pending before and after does not block consolidation),
nor do pods that fit on existing nodes: kube-scheduler is about to bind them, and they stay in the
snapshot, so the consolidation search counts the room they take.

Pure: the snapshot and a solver in, the halted pools out.
"""

from __future__ import annotations

from collections.abc import Callable

from kapstan.scheduling.model import Plan, Snapshot


def pending_for_provisioning(snapshot: Snapshot, solve: Callable[[Snapshot], Plan]) -> dict[str, str]:
    """NodePool to why it is still provisioning: the pending pods of ``snapshot`` it would launch a node
    for. Empty when no pod is pending (no solve then)."""
    if not snapshot.pods:
        return {}
    waiting: dict[str, list[str]] = {}
    for claim in solve(snapshot).node_claims:
        waiting.setdefault(claim.node_pool, []).extend(claim.pods)
    return {
        pool: f"{len(pods)} pods pending for provisioning ({sorted(pods)[0]}{', ...' if len(pods) > 1 else ''})"
        for pool, pods in sorted(waiting.items())
        if pods
    }
