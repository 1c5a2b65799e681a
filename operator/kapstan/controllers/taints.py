"""Writing a Node's taints. The ``karpenter.sh/disrupted`` taint: termination and disruption both put it on
a Node before they move its pods, so nothing new lands there meanwhile (docs/architecture.md#data-flow,
step 8). Every taint write (that one, registration's and adoption's) goes through ``patch_taints``, which
replaces the taint list only if it is still the one it was read with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kapstan.api.wellknown import DISRUPTED_TAINT_KEY, disrupted_taint
from kapstan.kube.client import Client, Object
from kapstan.kube.jsonpatch import as_read, patch_if_unchanged, set_members
from kapstan.kube.kinds import NODES
from kapstan.kube.meta import Meta

REREAD = 0.2
"""Seconds before a Node patch whose ``test`` failed (the taints changed since read) is decided again, from
the informer's newer copy of the Node."""
SPEC = ("spec",)
LABELS = ("metadata", "labels")


def taints_of(node: Object) -> list[dict[str, Any]]:
    return list(node.get("spec", {}).get("taints") or [])


def disrupted(node: Object) -> bool:
    """Whether the Node carries ``karpenter.sh/disrupted`` (whatever its effect)."""
    return any(t.get("key") == DISRUPTED_TAINT_KEY for t in taints_of(node))


async def mark_disrupted(client: Client, node: Object) -> bool:
    """Add ``karpenter.sh/disrupted:NoSchedule`` unless the Node has it; False if its taints changed since
    read (``patch_taints``: another writer's taint is never dropped; the caller decides again from a newer
    copy). The kubelet's status writes since the read do not refuse it, as they did when it was
    conditional on the Node's resourceVersion."""
    if disrupted(node):
        return True
    return await patch_taints(client, node, [*taints_of(node), disrupted_taint()])


async def patch_taints(
    client: Client, node: Object, taints: list[Object], labels: Mapping[str, str] | None = None
) -> bool:
    """Set ``taints`` (and ``labels``) on the Node if its taints are still those it was read with; False if
    they changed (the caller decides again from the informer's newer copy, after ``REREAD``).

    A JSON patch conditional on what it replaces: the taint list is written whole, so it ``test``s that
    list (a taint added since, the node lifecycle controller's or a disruption's, is kept), and the labels
    are added one by one, which leaves everyone else's alone. Conditional on the Node's resourceVersion
    instead, it lost the race to the kubelet's and the node controller's status writes about 30 times in a
    1,000-pod scale-up (bench.live, issue 14), each a retry."""
    meta = Meta.of(node)
    changed = {key: value for key, value in (labels or {}).items() if meta.labels.get(key) != value}
    ops = [
        *set_members(node, SPEC, {"taints": taints}, tested=as_read(node, SPEC, "taints")),
        *set_members(node, LABELS, changed),
    ]
    return await patch_if_unchanged(client, NODES, meta.name, ops) is not None
