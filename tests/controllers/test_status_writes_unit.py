"""The NodePool and ClusterAPINodeClass status writes test the condition list they replace, not the
object's resourceVersion: a write since the read that leaves the conditions alone (a label, our own
``status.resources`` the cache does not show yet) must not refuse them (it did, as a 409 the write gave
up on until the next watch event), while a condition another controller wrote since must, and is kept."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from controllers.fake_cluster import NODE_CLASS, POOL, World, world
from kapstan.api.wellknown import NODECLASS_READY, READY, UNREGISTERED_TAINT_CONDITION, VALIDATION_SUCCEEDED
from kapstan.controllers import conditions as cond
from kapstan.controllers.status import NodeClassStatus, NodePoolStatus
from kapstan.kube.client import Object, Resource
from kapstan.kube.kinds import NODECLASSES, NODEPOOLS

HEALTHY = {"type": "NodeRegistrationHealthy", "status": "True", "reason": "Healthy", "message": ""}
EARLIER_RESOURCES = {"nodes": "5"}


def _stored(w: World, resource: Resource, name: str) -> Object:
    return w.api._find(resource, name, None)


def _with_status(w: World, resource: Resource, name: str) -> None:
    """The object as an earlier status write left it: a status with no conditions yet."""
    w.api.put(resource, {**_stored(w, resource, name), "status": {"resources": dict(EARLIER_RESOURCES)}})


def _types(obj: Object) -> list[str]:
    return sorted(c["type"] for c in cond.conditions_of(obj))


def _labelled(obj: Object) -> None:
    obj["metadata"].setdefault("labels", {})["team"] = "batch"


def _resources_written(obj: Object) -> None:
    obj["status"]["resources"] = {"nodes": "6"}


def _healthy_written_once(obj: Object) -> None:
    if HEALTHY not in cond.conditions_of(obj):
        obj["status"]["conditions"] = [*cond.conditions_of(obj), HEALTHY]


def _reconcile_pool(w: World) -> None:
    asyncio.run(NodePoolStatus(w.state, w.provider, w.events, clock=w.clock).reconcile(POOL))


POOL_CONDITIONS = sorted([NODECLASS_READY, READY, VALIDATION_SUCCEEDED])


@pytest.mark.parametrize("since", [_labelled, _resources_written], ids=["a label", "resources"])
def test_a_write_since_the_read_that_leaves_the_conditions_alone_does_not_refuse_the_pool_status(
    since: Callable[[Object], None],
) -> None:
    w = world()
    _with_status(w, NODEPOOLS, POOL)
    w.before_patches(NODEPOOLS, since)
    _reconcile_pool(w)
    pool = _stored(w, NODEPOOLS, POOL)
    assert _types(pool) == POOL_CONDITIONS
    assert pool["status"]["resources"] == {"nodes": "0"}


def test_a_condition_written_since_the_read_refuses_the_pool_status_and_is_kept() -> None:
    w = world()
    _with_status(w, NODEPOOLS, POOL)
    w.before_patches(NODEPOOLS, _healthy_written_once)
    _reconcile_pool(w)
    pool = _stored(w, NODEPOOLS, POOL)
    assert cond.conditions_of(pool) == [HEALTHY]
    assert pool["status"]["resources"] == EARLIER_RESOURCES, "refused whole"
    _reconcile_pool(w)  # the watch event of the condition's write
    assert _types(_stored(w, NODEPOOLS, POOL)) == sorted([*POOL_CONDITIONS, HEALTHY["type"]])


def test_a_label_written_since_the_read_does_not_refuse_the_node_class_status() -> None:
    w = world()
    w.before_patches(NODECLASSES, _labelled)
    asyncio.run(NodeClassStatus(w.state, w.provider, w.events, clock=w.clock).reconcile(NODE_CLASS))
    node_class = _stored(w, NODECLASSES, NODE_CLASS)
    assert _types(node_class) == sorted([READY, UNREGISTERED_TAINT_CONDITION])
    assert node_class["metadata"]["labels"] == {"team": "batch"}
