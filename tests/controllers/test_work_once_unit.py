"""Work the controllers must not do again at every step (issue 13): a launch reads the catalog the state
keeps instead of building it, and one ``Manager`` clock drives every controller."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from controllers.fake_cluster import CLUSTER, NODE_CLASS, World, world
from kapstan.api.wellknown import LAUNCHED
from kapstan.capi import Paused
from kapstan.capi import contract as c
from kapstan.controllers import conditions as cond
from kapstan.controllers.manager import Manager, Options
from kapstan.controllers.nodeclaim import Lifecycle, Timeouts
from kapstan.controllers.state import TEMPLATE_TTL, Gathered
from kapstan.kube.client import CONFIGMAPS, Object
from kapstan.kube.clock import FakeClock, SystemClock
from kapstan.kube.informer import Informer
from kapstan.kube.kinds import NODECLASSES
from kapstan.local import article

TIMEOUTS = Timeouts(launch=300.0, registration=900.0, retry=10.0, poll=5.0)


def count_gathers(w: World, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every ``state.gather`` call from now on, as its ``pods`` argument."""
    calls: list[bool] = []
    real: Callable[..., Awaitable[Gathered]] = w.state.gather

    async def counted(*, pods: bool = True) -> Gathered:
        calls.append(pods)
        return await real(pods=pods)

    monkeypatch.setattr(w.state, "gather", counted)
    return calls


def _lifecycle(w: World) -> Lifecycle:
    return Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, TIMEOUTS, clock=w.clock)


def test_a_launch_and_its_retries_while_the_md_is_paused_gather_the_catalog_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world()
    lifecycle = _lifecycle(w)
    name = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    gathers = count_gathers(w, monkeypatch)
    w.provider.fail_next("create", Paused("md-c3-4 is paused"))
    w.provider.fail_next("create", Paused("md-c3-4 is paused"))
    for _ in range(2):
        assert asyncio.run(lifecycle.reconcile(w.claim_now(name))).requeue_after == TIMEOUTS.retry
        w.clock.advance(TIMEOUTS.retry)
    asyncio.run(lifecycle.reconcile(w.claim_now(name)))
    assert cond.is_true(w.claim_now(name), LAUNCHED)
    assert len(w.provider.calls) == 3
    assert gathers == [False]  # three launch attempts, one catalog


def test_a_launch_after_an_md_changed_builds_the_catalog_again_and_sees_the_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world()
    lifecycle = _lifecycle(w)
    first = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    gathers = count_gathers(w, monkeypatch)
    asyncio.run(lifecycle.reconcile(w.claim_now(first)))
    # A second MD appears: a claim for its flavor can only launch from a catalog built after it came.
    w.add(article.standalone(CLUSTER.namespace, CLUSTER.name, {"md-c3-8": "c3-8"}))
    second = asyncio.run(w.claim("c3-8"))["metadata"]["name"]
    asyncio.run(lifecycle.reconcile(w.claim_now(second)))
    assert cond.is_true(w.claim_now(second), LAUNCHED)
    assert [call.argument.source.name for call in w.provider.calls] == ["md-c3-4", "md-c3-8"]  # type: ignore[union-attr]
    assert gathers == [False, False]


def test_a_changed_md_annotation_is_a_change_and_a_pod_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    w = world()
    gathers = count_gathers(w, monkeypatch)
    asyncio.run(w.state.simulation_input())
    w.pod("unrelated", "some-node")
    asyncio.run(w.state.simulation_input())
    assert gathers == [False]
    md = w.state.machine_deployments.store.get_by_name("md-c3-4", CLUSTER.namespace)
    assert md is not None
    changed: Any = copy.deepcopy(md)
    changed["metadata"].setdefault("annotations", {})["example.com/touched"] = "yes"
    w.api.put(c.MACHINEDEPLOYMENTS, changed)
    asyncio.run(w.state.simulation_input())
    assert gathers == [False, False]


def test_a_price_configmap_is_read_again_after_its_ttl_and_the_catalog_rebuilt_only_if_it_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Price ConfigMaps are read through a TTL cache, not watched: the kept catalog follows what that cache
    # gives, so it is never staler than before, and a refresh that brings back the same object keeps it.
    w = world()
    w.api.informers[CONFIGMAPS.plural] = Informer(w.api, CONFIGMAPS)
    w.api.put(CONFIGMAPS, _prices({"c3-4": "0.5"}))
    node_class: Any = copy.deepcopy(w.state.node_classes.store.get(NODE_CLASS))
    node_class["spec"]["priceTableRef"] = {"name": "prices", "namespace": "kapstan"}
    w.api.put(NODECLASSES, node_class)
    gathers = count_gathers(w, monkeypatch)

    def price() -> float:
        simulation = asyncio.run(w.state.simulation_input())
        (flavor,) = simulation.snapshot.instance_types
        return flavor.offerings[0].price

    assert price() == 0.5
    w.clock.advance(TEMPLATE_TTL + 1)
    assert price() == 0.5
    assert gathers == [False]  # read again, the same resourceVersion: the catalog is kept
    w.api.put(CONFIGMAPS, _prices({"c3-4": "0.75"}))
    assert price() == 0.5  # the TTL cache still holds the old table, as it did before the catalog was kept
    w.clock.advance(TEMPLATE_TTL + 1)
    assert price() == 0.75
    assert gathers == [False, False]


def _prices(data: dict[str, str]) -> Object:
    meta = {"name": "prices", "namespace": "kapstan"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def _reachable(root: object) -> list[object]:
    """Every kapstan (and cachetools) object reachable from ``root`` through attributes, containers and
    bound methods (the handlers informers hold)."""
    seen: set[int] = set()
    found: list[object] = []
    todo: list[object] = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, dict):
            todo += list(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            todo += list(obj)
        elif hasattr(obj, "__self__") and hasattr(obj, "__func__"):
            todo.append(obj.__self__)
        elif type(obj).__module__.split(".")[0] in ("kapstan", "cachetools"):
            found.append(obj)
            todo += list(getattr(obj, "__dict__", {}).values())
            for slot in getattr(type(obj), "__slots__", ()):
                todo.append(getattr(obj, slot, None))
    return found


def test_a_manager_given_a_clock_hands_it_to_every_controller() -> None:
    clock = FakeClock()
    api = world().api
    manager = Manager(Options(CLUSTER, leader_elect=False), api, api, clock=clock)  # type: ignore[arg-type]
    reached = _reachable(manager)
    assert clock in reached
    assert [type(o).__name__ for o in reached if isinstance(o, SystemClock)] == []
