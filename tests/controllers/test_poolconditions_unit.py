"""A condition another controller than the NodePool status controller owns is written with a JSON patch
testing the condition list it replaces: the status controller's writes of ``status.resources`` since the
read do not refuse it (11 to 14 refusals a bench.live run when it was conditional on the resourceVersion),
a condition written since does, and is kept."""

from __future__ import annotations

import asyncio
from typing import Any

from controllers.fake_cluster import POOL, World, world
from kapstan.controllers import conditions as cond
from kapstan.controllers.poolconditions import set_pool_condition
from kapstan.kube.client import Object
from kapstan.kube.kinds import NODEPOOLS

HEALTHY = "NodeRegistrationHealthy"
RESOURCES = {"nodes": "1", "cpu": "4"}


def _set(w: World) -> None:
    asyncio.run(set_pool_condition(w.state, POOL, HEALTHY, cond.TRUE, "NodeRegistered", "", w.clock.wall()))


def _pool(w: World) -> Object:
    found = w.state.node_pools.store.get(POOL)
    assert found is not None
    return found


def _types(w: World) -> dict[str, Any]:
    return {c["type"]: c["status"] for c in cond.conditions_of(_pool(w))}


def _with_resources(w: World) -> None:
    """The pool as the status controller leaves it: a status with resources and no conditions yet."""
    w.api.put(NODEPOOLS, {**_pool(w), "status": {"resources": dict(RESOURCES)}})


def test_a_resources_write_since_the_read_does_not_refuse_the_condition() -> None:
    w = world()
    _with_resources(w)

    def resources_written(pool: Object) -> None:
        pool["status"]["resources"] = {**RESOURCES, "nodes": "2"}

    w.before_patches(NODEPOOLS, resources_written)
    _set(w)
    assert _types(w) == {HEALTHY: cond.TRUE}
    assert _pool(w)["status"]["resources"] == {**RESOURCES, "nodes": "2"}, "the other write is not undone"
    assert len(w.api.writes_of("patch", "nodepools")) == 1


def test_a_condition_written_since_the_read_refuses_the_write_and_is_kept() -> None:
    w = world()
    _with_resources(w)
    ready = {"type": "Ready", "status": cond.TRUE, "reason": "Ready", "message": ""}

    def ready_written(pool: Object) -> None:
        if not cond.conditions_of(pool):  # once: the re-read sees it
            pool["status"]["conditions"] = [ready]

    w.before_patches(NODEPOOLS, ready_written)
    _set(w)
    assert _types(w) == {"Ready": cond.TRUE, HEALTHY: cond.TRUE}
    assert _pool(w)["status"]["resources"] == RESOURCES


def test_a_pool_without_a_status_gets_one_with_the_condition() -> None:
    w = world()
    assert "status" not in _pool(w)
    _set(w)
    assert _pool(w)["status"] == {"conditions": cond.conditions_of(_pool(w))}
    assert _types(w) == {HEALTHY: cond.TRUE}
