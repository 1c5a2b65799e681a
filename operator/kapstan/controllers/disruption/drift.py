"""Drift and expiration: is a NodeClaim still what its NodePool and its MachineDeployment would make
today, and has it lived past ``expireAfter``?

Drift has three sources. The NodePool's template changed (its hash, versioned so that a new hashing
scheme does not call every node drifted). The claim's labels no longer satisfy the pool's requirements.
Or CAPI drift, on MDs whose rollout strategy is ``OnDelete``: the Machine was made from another bootstrap
or infrastructure template than its MD uses now (a new KubeadmConfigTemplate revision, a new machine
template), or for another Kubernetes version.
CAPI records what a Machine was cloned from (``cluster.x-k8s.io/cloned-from-name`` on its bootstrap
config and infrastructure machine); the controller reads those and passes them in.

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
from kapstan.capi import contract as c
from kapstan.controllers import conditions as cond
from kapstan.controllers.provisioner import nodepool_hash
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


def capi_drift(
    machine: Object, md: Object, bootstrap_from: str | None, infrastructure_from: str | None
) -> str:
    """The Machine against its MD's template now. ``*_from`` are the templates the Machine's bootstrap
    config and infrastructure machine were cloned from (None when unknown: no drift claimed).

    Only an ``OnDelete`` MD's Machines drift: with ``RollingUpdate`` CAPI replaces outdated Machines by
    itself, and a kapstan replacement would race it (CAPI refuses nothing, kapstan refuses to delete from
    an MD that is rolling out, so the command would fail and roll back over and over)."""
    if not c.on_delete(md):
        return ""
    template = md.get("spec", {}).get("template", {}).get("spec", {})
    version = template.get("version")
    have = machine.get("spec", {}).get("version")
    if version and have and version != have:
        return "KubernetesVersionDrifted"
    wanted_bootstrap = (template.get("bootstrap", {}).get("configRef") or {}).get("name")
    if bootstrap_from and wanted_bootstrap and bootstrap_from != wanted_bootstrap:
        return "BootstrapTemplateDrifted"
    wanted_infrastructure = (template.get("infrastructureRef") or {}).get("name")
    if infrastructure_from and wanted_infrastructure and infrastructure_from != wanted_infrastructure:
        return "InfrastructureTemplateDrifted"
    return ""


def expired(claim: Object, expire_after: timedelta | None, now: datetime) -> bool:
    """``expireAfter`` has passed since the claim was created (``Never`` never expires)."""
    if expire_after is None:
        return False
    created = cond.parse_time(Meta.of(claim).created)
    return created is not None and now >= created + expire_after
