"""What a drain does with a pod, shared by disruption (what moving a node would move) and termination
(what the drain evicts)."""

from __future__ import annotations

from datetime import datetime

from kapstan.api.duration import parse_duration
from kapstan.api.wellknown import DO_NOT_DISRUPT_ANNOTATION, MIRROR_POD_ANNOTATION
from kapstan.controllers import conditions as cond
from kapstan.kube.client import Object
from kapstan.kube.meta import Meta


def drained(pod: Object) -> bool:
    """Pods a drain moves: not DaemonSet pods (they would come back), not static, not finished."""
    return _drained(pod, Meta.of(pod))


def _drained(pod: Object, meta: Meta) -> bool:
    if MIRROR_POD_ANNOTATION in meta.annotations or meta.owned_by("DaemonSet", "Node"):
        return False
    return pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def reschedulable(pod: Object) -> bool:
    """Pods a drain would move that are not already going."""
    meta = Meta.of(pod)
    return _drained(pod, meta) and not meta.deleting


def pod_key(pod: Object) -> str:
    meta = Meta.of(pod)
    return f"{meta.namespace}/{meta.name}"


def do_not_disrupt(obj: Object, now: datetime) -> bool:
    """``karpenter.sh/do-not-disrupt``: ``"true"`` protects; a duration protects for that long after the
    pod started; anything else protects too (a typo must not expose a pod its owner meant to keep)."""
    meta = Meta.of(obj)
    value = meta.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None:
        return False
    if value.strip().lower() == "false":
        return False
    if value.strip().lower() == "true":
        return True
    try:
        protected = parse_duration(value.strip())
    except ValueError:
        return True
    started = cond.parse_time(obj.get("status", {}).get("startTime") or meta.created)
    return started is None or started + protected > now
