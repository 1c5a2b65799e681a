"""The pods and claims the provisioner's unit tests hand it, built one way for all of them: a pending pod as
the API server holds it, the same pod once kube-scheduler found no room for it, a claim come up Initialized,
and a pod arriving through the pod handler."""

from __future__ import annotations

import copy
from typing import Any

from fake_cluster import World

from kapstan.controllers.provisioner import Provisioner
from kapstan.kube.client import Object
from kapstan.kube.kinds import PODS
from kapstan.kube.store import Event


def pending_pod(name: str, cpu: str = "1", *, conditions: list[Object] | None = None, **spec: Any) -> Object:
    """A Pending pod in ``default`` with one container asking ``cpu``, as the ReplicaSet creates it: no
    PodScheduled condition until kube-scheduler tries it (``conditions``); other ``spec`` fields as given."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
        "status": {"phase": "Pending", "conditions": conditions or []},
    }


def unschedulable(name: str, cpu: str = "1", message: str | None = None) -> Object:
    """The pending pod once kube-scheduler found no room for it (PodScheduled False, reason Unschedulable),
    with the message it wrote when one is given: a new message is its verdict on a new try."""
    condition: Object = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    if message is not None:
        condition["message"] = message
    return pending_pod(name, cpu, conditions=[condition])


def initialized(claim: Object) -> Object:
    """The claim come up: its status says Initialized."""
    status = {**claim.get("status", {}), "conditions": [{"type": "Initialized", "status": "True"}]}
    return {**claim, "status": status}


def arrives(w: World, provisioner: Provisioner, pod: Object) -> None:
    """The pod is created and the provisioner's pod handler sees it, as the informer's ADDED would show it."""
    w.api.put(PODS, copy.deepcopy(pod))
    provisioner._on_pod(Event("ADDED", pod))
