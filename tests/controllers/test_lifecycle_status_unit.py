"""The lifecycle's status writes (launch, registration, initialization) test the condition list they
replace: a condition another controller wrote since the read (disruption's ``Consolidatable``) refuses the
write and is kept, and the step decides again from the newer copy; a write since the read that leaves the
conditions alone (disruption's ``lastPodEventTime``) does not refuse it. The write was an unconditional
merge of the whole list from the read, which dropped such a condition without a word."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest

from controllers.fake_cluster import World, world
from kapstan.api.wellknown import CONSOLIDATABLE, INITIALIZED, LAUNCHED, REGISTERED
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim import Lifecycle, Timeouts
from kapstan.controllers.taints import REREAD
from kapstan.kube.client import Object, Resource
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODECLAIMS

CONSOLIDATABLE_CONDITION = {"type": CONSOLIDATABLE, "status": "True", "reason": CONSOLIDATABLE, "message": ""}
POD_EVENT_TIME = "2026-01-01T00:00:00Z"


def _run(w: World, name: str) -> Result:
    lifecycle = Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, Timeouts(), clock=w.clock)
    return asyncio.run(lifecycle.reconcile(w.claim_now(name)))


def _before_launch(w: World) -> str:
    return str(asyncio.run(w.claim("c3-4"))["metadata"]["name"])


def _before_registration(w: World) -> str:
    name = _before_launch(w)
    _run(w, name)
    w.node("node-a", w.claim_now(name)["status"]["providerID"])
    return name


def _before_initialization(w: World) -> str:
    name = _before_registration(w)
    _run(w, name)
    w.node("node-a", w.claim_now(name)["status"]["providerID"], taints=[], ready=True)
    return name


STEPS = [
    (_before_launch, LAUNCHED),
    (_before_registration, REGISTERED),
    (_before_initialization, INITIALIZED),
]
IDS = ["launch", "registration", "initialization"]


def _once_before_the_next_status_patch(w: World, change: Callable[[Object], None]) -> None:
    """Run ``change`` on the stored claim just before the next status patch reaches the fake API server, as
    another controller's write between the lifecycle's read and its write."""
    patch = w.api.patch
    pending = [change]

    async def racing(resource: Resource, name: str, body: Any, **kwargs: Any) -> Object:
        if resource == NODECLAIMS and kwargs.get("subresource") == "status" and pending:
            obj = copy.deepcopy(w.api._find(resource, name, None))
            pending.pop()(obj)
            w.api.put(resource, obj)  # a new resourceVersion
        return await patch(resource, name, body, **kwargs)

    w.api.patch = racing  # type: ignore[method-assign]


def _consolidatable_written(obj: Object) -> None:
    obj["status"] = {
        **obj.get("status", {}),
        "conditions": [*cond.conditions_of(obj), CONSOLIDATABLE_CONDITION],
    }


def _pod_event_time_written(obj: Object) -> None:
    obj["status"] = {**obj.get("status", {}), "lastPodEventTime": POD_EVENT_TIME}


@pytest.mark.parametrize(("before", "kind"), STEPS, ids=IDS)
def test_a_condition_written_since_the_read_refuses_the_lifecycle_status_and_is_kept(
    before: Callable[[World], str], kind: str
) -> None:
    w = world()
    name = before(w)
    _once_before_the_next_status_patch(w, _consolidatable_written)
    result = _run(w, name)
    refused = w.claim_now(name)
    assert cond.is_true(refused, CONSOLIDATABLE), "the condition written since is not dropped"
    assert not cond.is_true(refused, kind), "refused whole"
    assert result.requeue_after == REREAD
    _run(w, name)  # decided again from the newer copy
    written = w.claim_now(name)
    assert cond.is_true(written, kind) and cond.is_true(written, CONSOLIDATABLE)


@pytest.mark.parametrize(("before", "kind"), STEPS, ids=IDS)
def test_a_status_write_since_the_read_that_leaves_the_conditions_alone_does_not_refuse_it(
    before: Callable[[World], str], kind: str
) -> None:
    w = world()
    name = before(w)
    if kind == LAUNCHED:  # a claim not launched has no status yet: a status added since refuses the write
        w.api.put(NODECLAIMS, {**w.claim_now(name), "status": {}})
    _once_before_the_next_status_patch(w, _pod_event_time_written)
    _run(w, name)
    written = w.claim_now(name)
    assert cond.is_true(written, kind), "written at the first try"
    assert written["status"]["lastPodEventTime"] == POD_EVENT_TIME, "the other write is kept"
