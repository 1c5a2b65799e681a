"""The NodeClaim a planned node becomes (docs/architecture.md#data-flow, step 4): the NodePool's template
narrowed to the plan's offering, after Karpenter's ``NodeClaimTemplate``.

Its own module because three writers make claims from a plan, the provisioner, consolidation's
replacements (``disruption/orchestrate.py``) and the fake cluster of the unit tests, and drift compares a
claim's ``nodepool_hash`` with its pool's; none of them needs the provisioner's batching.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from kapstan.api.quantity import format_quantity
from kapstan.api.wellknown import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    NODEPOOL,
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    PRICE_ANNOTATION,
    TERMINATION_FINALIZER,
    ZONE,
)
from kapstan.kube.client import Object
from kapstan.kube.kinds import NODECLAIMS
from kapstan.kube.meta import Meta
from kapstan.scheduling.model import PlannedNodeClaim, Snapshot

_NARROWED = (INSTANCE_TYPE, ZONE, CAPACITY_TYPE)


def nodepool_hash(pool: Object) -> str:
    """A digest of the NodePool's template, so drift can tell a claim made from an older template."""
    template = pool.get("spec", {}).get("template", {})
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def nodeclaim_manifest(
    claim: PlannedNodeClaim, pool: Object, snapshot: Snapshot, alternatives: Sequence[str] = ()
) -> Object:
    """The NodeClaim for one planned node: the pool's template narrowed to the chosen offering's zone and
    capacity type, and to the chosen flavor followed by its ranked ``alternatives`` (launch tries them in
    that order); the labels name the chosen flavor."""
    template = pool["spec"]["template"]
    spec = template.get("spec", {})
    pool_meta = Meta.of(pool)
    pool_name = pool_meta.name
    labels = {
        **(template.get("metadata", {}).get("labels") or {}),
        **claim.labels,
        NODEPOOL: pool_name,
        INSTANCE_TYPE: claim.instance_type,
        ZONE: claim.zone,
        CAPACITY_TYPE: claim.capacity_type,
    }
    requirements = [r for r in spec.get("requirements") or [] if r.get("key") not in _NARROWED]
    requirements += [
        {"key": INSTANCE_TYPE, "operator": "In", "values": [claim.instance_type, *alternatives]},
        {"key": ZONE, "operator": "In", "values": [claim.zone]},
        {"key": CAPACITY_TYPE, "operator": "In", "values": [claim.capacity_type]},
    ]
    body: Object = {
        "apiVersion": NODECLAIMS.api_version,
        "kind": NODECLAIMS.kind,
        "metadata": {
            "generateName": f"{pool_name}-",
            "labels": labels,
            "annotations": {
                **(template.get("metadata", {}).get("annotations") or {}),
                NODEPOOL_HASH_ANNOTATION: nodepool_hash(pool),
                NODEPOOL_HASH_VERSION_ANNOTATION: NODEPOOL_HASH_VERSION,
                PRICE_ANNOTATION: str(claim.price_per_hour),
            },
            "finalizers": [TERMINATION_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": pool["apiVersion"],
                    "kind": pool["kind"],
                    "name": pool_name,
                    "uid": pool_meta.uid,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeClassRef": spec["nodeClassRef"],
            "requirements": requirements,
            "resources": {"requests": _requests(claim, snapshot)},
        },
    }
    for key in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        if spec.get(key):
            body["spec"][key] = spec[key]
    return body


def _requests(claim: PlannedNodeClaim, snapshot: Snapshot) -> dict[str, str]:
    pods = {pod.key: pod for pod in snapshot.pods}
    total: dict[str, int] = {}
    for key in claim.pods:
        for name, amount in pods[key].requests.items():
            total[name] = total.get(name, 0) + amount
    return {name: format_quantity(name, amount) for name, amount in sorted(total.items())}
