"""A disruption pass gathers the cluster once (issue 13): the look after the validation delay, and the
next pass, reuse the snapshot while nothing it is built from changed, and gather again when something did.
Runs on the fake API and a fake clock."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable

import pytest

from controllers.fake_cluster import World, stamp, world
from controllers.test_work_once_unit import count_gathers
from kapstan.api.wellknown import CONSOLIDATABLE, INITIALIZED, LAUNCHED, REGISTERED
from kapstan.controllers import conditions as cond
from kapstan.controllers.disruption import Disruption, DisruptionOptions
from kapstan.kube.kinds import NODECLAIMS

NODE = "node-1"


def _initialized_claim_on_a_node(w: World, *, marked: bool = True) -> str:
    """A claim launched, registered and initialized an hour ago, on its own Node and Machine; ``marked``:
    already Consolidatable (so the first look writes nothing back)."""
    name: str = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    w.machine("m-1", "fake://m-1", claim=name)
    w.node(NODE, "fake://m-1", taints=[], ready=True)
    body = copy.deepcopy(w.claim_now(name))
    long_ago = stamp(w.clock, 3600)
    body["status"] = {
        "providerID": "fake://m-1",
        "nodeName": NODE,
        "conditions": [
            {"type": kind, "status": "True", "reason": kind, "lastTransitionTime": long_ago}
            for kind in (LAUNCHED, REGISTERED, INITIALIZED, *([CONSOLIDATABLE] if marked else []))
        ],
    }
    w.api.put(NODECLAIMS, body)
    return name


def _pass(w: World, disruption: Disruption, during_delay: Callable[[], object] = lambda: None) -> bool:
    """One ``reconcile``, the fake clock moved past the validation delay once the pass waits on it."""

    async def run() -> bool:
        task = asyncio.ensure_future(disruption.reconcile())
        while not task.done():
            await asyncio.sleep(0.001)
            if w.clock.sleepers:
                during_delay()
                w.clock.advance(disruption.options.validation_delay)
        return task.result()

    return asyncio.run(run())


def _disruption(w: World) -> Disruption:
    return Disruption(w.state, w.provider, w.events, DisruptionOptions(), clock=w.clock)


def test_a_pass_that_deletes_an_empty_node_gathers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    w = world()
    claim = _initialized_claim_on_a_node(w)
    disruption = _disruption(w)
    gathers = count_gathers(w, monkeypatch)
    assert _pass(w, disruption)
    assert [write.name for write in w.api.writes_of("delete", "nodeclaims")] == [claim]
    assert gathers == [True]  # decided, waited the validation delay, re-checked and acted: one gather


def test_a_pass_that_marks_the_node_consolidatable_and_deletes_it_gathers_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world()
    claim = _initialized_claim_on_a_node(w, marked=False)
    disruption = _disruption(w)
    gathers = count_gathers(w, monkeypatch)
    assert _pass(w, disruption)
    assert cond.is_true(w.claim_now(claim), CONSOLIDATABLE)  # the first look wrote the condition
    assert [write.name for write in w.api.writes_of("delete", "nodeclaims")] == [claim]
    assert gathers == [True]  # the pass's own status write is nothing the snapshot reads: one gather


def test_a_pod_landing_during_the_validation_delay_is_seen_by_the_recheck(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    w = world()
    claim = _initialized_claim_on_a_node(w)
    disruption = _disruption(w)
    gathers = count_gathers(w, monkeypatch)
    with caplog.at_level(logging.INFO, logger="kapstan.controllers.disruption.controller"):
        assert not _pass(w, disruption, during_delay=lambda: w.pod("arrived", NODE))
    assert w.api.writes_of("delete", "nodeclaims") == []
    dropped = [
        r for r in caplog.records if r.message == "disruption no longer valid after the validation delay"
    ]
    assert [getattr(r, "why", None) for r in dropped] == [f"{claim} is no longer empty and consolidatable"]
    assert gathers == [True, True]  # the cluster changed, so the recheck gathered it again


def test_quiet_passes_reuse_the_snapshot_until_a_pod_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    w = world()
    _initialized_claim_on_a_node(w)
    busy = w.pod("busy", NODE)
    disruption = _disruption(w)
    gathers = count_gathers(w, monkeypatch)
    assert not _pass(w, disruption)
    assert not _pass(w, disruption)
    assert gathers == [True]
    w.state.pods.store.delete(busy)
    _pass(w, disruption)
    assert gathers == [True, True]
