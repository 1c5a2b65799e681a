"""Drift and expiration: is a NodeClaim still what its NodePool and its MachineDeployment would make
today, and has it lived past ``expireAfter``?

Drift has three sources. The NodePool's template changed (its hash, versioned so that a new hashing
scheme does not call every node drifted). The claim's labels no longer satisfy the pool's requirements.
Or CAPI drift, on MDs whose rollout strategy is ``OnDelete``: the provider judges that one
(``CloudProvider.drift``, ``capi/drift.py``), since it means reading the Machine against its MD.

Pure: objects in, a reason (or an empty string) out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kapstan.api.wellknown import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    ZONE,
)
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim_template import nodepool_hash
from kapstan.kube.client import Object
from kapstan.kube.meta import Meta


def nodepool_drift(claim: Object, pool: Object) -> str:
    annotations = Meta.of(claim).annotations
    recorded = annotations.get(NODEPOOL_HASH_ANNOTATION)
    if annotations.get(NODEPOOL_HASH_VERSION_ANNOTATION) != NODEPOOL_HASH_VERSION or not recorded:
        return ""  # made under another hashing scheme: cannot tell, so not drifted (Karpenter's rule)
    if recorded != nodepool_hash(pool):
        return "NodePoolDrifted"
    return ""


def requirements_drift(claim: Object, requirements: Sequence[Mapping[str, Any]]) -> str:
    """The pool's requirements checked against the labels the claim carries; keys it does not carry are
    left alone (the pool may constrain labels the flavor never sets)."""
    labels = Meta.of(claim).labels
    for requirement in requirements:
        key, operator = requirement.get("key", ""), requirement.get("operator", "")
        values = [str(v) for v in requirement.get("values") or []]
        if key not in labels:
            if operator in ("In", "Exists") and key in _ALWAYS_LABELLED:
                return "RequirementsDrifted"
            continue
        value = labels[key]
        if (
            (operator == "In" and value not in values)
            or (operator == "NotIn" and value in values)
            or operator == "DoesNotExist"
            or (operator in ("Gt", "Lt", "Gte", "Lte") and not _compare(operator, value, values))
        ):
            return "RequirementsDrifted"
    return ""


_ALWAYS_LABELLED = frozenset({INSTANCE_TYPE, ZONE, CAPACITY_TYPE})


def _compare(operator: str, value: str, values: list[str]) -> bool:
    try:
        have, bound = int(value), int(values[0])
    except (ValueError, IndexError):
        return False
    return {"Gt": have > bound, "Lt": have < bound, "Gte": have >= bound, "Lte": have <= bound}[operator]


def expired(claim: Object, expire_after: timedelta | None, now: datetime) -> bool:
    """``expireAfter`` has passed since the claim was created (``Never`` never expires)."""
    if expire_after is None:
        return False
    created = cond.parse_time(Meta.of(claim).created)
    return created is not None and now >= created + expire_after
