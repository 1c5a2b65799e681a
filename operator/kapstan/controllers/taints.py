"""Writing a Node's taints. The ``karpenter.sh/disrupted`` taint: termination and disruption both put it on
a Node before they move its pods, so nothing new lands there meanwhile (docs/architecture.md#data-flow,
step 8). ``patch_taints``: registration and adoption replace the taint list only if it is still the one
they read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kapstan.api.wellknown import DISRUPTED_TAINT_KEY, disrupted_taint
from kapstan.kube.client import Client, Object
from kapstan.kube.errors import ApiError
from kapstan.kube.jsonpatch import as_read, set_members
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


async def mark_disrupted(client: Client, node: Object) -> None:
    """Add ``karpenter.sh/disrupted:NoSchedule`` unless the Node has it, conditional on its
    resourceVersion: a 409 means another writer changed the taints, and the caller's retry reads them
    again instead of overwriting them."""
    if disrupted(node):
        return
    meta = Meta.of(node)
    patch = {
        "metadata": {"resourceVersion": meta.resource_version},
        "spec": {"taints": [*taints_of(node), disrupted_taint()]},
    }
    await client.patch(NODES, meta.name, patch)


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
    try:
        await client.patch(NODES, meta.name, ops, patch_type="json")
    except ApiError as error:
        if error.test_failed:
            return False
        raise
    return True
