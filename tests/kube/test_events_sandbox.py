"""Events on a real API server: what an Event says, how repeats aggregate, and that failures stay quiet."""

from __future__ import annotations

import asyncio
import logging

import pytest
from kube_helpers import NAMESPACES, fresh_namespace

from kapstan.kube.client import CONFIGMAPS, Client, Object
from kapstan.kube.clock import FakeClock
from kapstan.kube.events import AGGREGATION_WINDOW, EVENTS, SERIES_INTERVAL, EventRecorder, list_events
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox


async def _configmap(client: Client, namespace: str, name: str) -> Object:
    created = await client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": namespace}})
    # Objects from an informer carry apiVersion and kind; a create answer does too, but be explicit.
    return {"apiVersion": "v1", "kind": "ConfigMap", **created}


def test_event_names_the_object_and_repeats_aggregate(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        namespace = await fresh_namespace(client, "events")
        target = await _configmap(client, namespace, "target")
        clock = FakeClock()
        recorder = EventRecorder(client, "kapstan-test", clock=clock)

        await recorder.emit(target, "Warning", "FailedScheduling", "no flavor fits: cpu 64 > 16")
        [event] = await list_events(client, target)
        assert event["metadata"]["namespace"] == namespace
        assert event["involvedObject"] == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "target",
            "namespace": namespace,
            "uid": target["metadata"]["uid"],
            "resourceVersion": target["metadata"]["resourceVersion"],
        }
        assert (event["type"], event["reason"], event["message"]) == (
            "Warning",
            "FailedScheduling",
            "no flavor fits: cpu 64 > 16",
        )
        assert event["source"] == {"component": "kapstan-test"}
        assert event["reportingComponent"] == "kapstan-test"
        assert event["count"] == 1
        assert event["firstTimestamp"] == event["lastTimestamp"]

        # The same report again inside the window: the same Event, counted twice.
        clock.advance(AGGREGATION_WINDOW - 1)
        await recorder.emit(target, "Warning", "FailedScheduling", "no flavor fits: cpu 64 > 16")
        [again] = await list_events(client, target)
        assert again["metadata"]["name"] == event["metadata"]["name"]
        assert again["count"] == 2
        assert again["lastTimestamp"] >= again["firstTimestamp"]

        # A different message is a different Event.
        await recorder.emit(target, "Warning", "FailedScheduling", "no flavor fits: memory")
        assert [e["count"] for e in await list_events(client, target)] == [2, 1]

        # After ten quiet minutes the next repeat starts a new Event rather than reviving the old one.
        clock.advance(AGGREGATION_WINDOW + 1)
        await recorder.emit(target, "Warning", "FailedScheduling", "no flavor fits: cpu 64 > 16")
        events = await list_events(client, target)
        assert len(events) == 3
        assert sorted(e["count"] for e in events) == [1, 1, 2]

    asyncio.run(scenario())


def test_event_deleted_by_the_server_is_recreated(sandbox: Sandbox) -> None:
    """The API server drops Events after its event TTL; the next repeat must not be lost patching it."""

    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        namespace = await fresh_namespace(client, "events")
        target = await _configmap(client, namespace, "expiring")
        recorder = EventRecorder(client)
        await recorder.emit(target, "Normal", "Nominated", "nominated for nodeclaim default-abc")
        [first] = await list_events(client, target)
        await client.delete(EVENTS, first["metadata"]["name"], namespace)

        await recorder.emit(target, "Normal", "Nominated", "nominated for nodeclaim default-abc")
        [second] = await list_events(client, target)
        assert second["metadata"]["name"] != first["metadata"]["name"]
        assert second["count"] == 1
        assert second["source"] == {"component": "kapstan"}

    asyncio.run(scenario())


def test_cluster_scoped_object_events_go_to_default(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        name = await fresh_namespace(client, "scoped")
        namespace_object = {"apiVersion": "v1", "kind": "Namespace", **await client.get(NAMESPACES, name)}
        await EventRecorder(client).emit(namespace_object, "Normal", "Checked", "cluster-scoped")
        [event] = await list_events(client, namespace_object)
        assert event["metadata"]["namespace"] == "default"
        assert "namespace" not in event["involvedObject"]
        assert event["involvedObject"]["name"] == name

    asyncio.run(scenario())


def test_failures_are_logged_not_raised(sandbox: Sandbox, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        recorder = EventRecorder(client)
        # The namespace does not exist, so the API server refuses the Event.
        ghost = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ghost", "namespace": "no-such-namespace", "uid": "0000-ghost"},
        }
        with caplog.at_level(logging.WARNING, logger="kapstan.kube.events"):
            await recorder.emit(ghost, "Warning", "Lost", "nobody will read this")
            await recorder.emit({"kind": "Pod", "metadata": {"name": "no-uid"}}, "Normal", "Odd", "malformed")
        dropped = [r for r in caplog.records if r.name == "kapstan.kube.events"]
        assert len(dropped) == 2
        assert all(r.levelno == logging.WARNING for r in dropped)
        assert "dropping event Lost on ConfigMap no-such-namespace/ghost" in dropped[0].getMessage()
        assert "dropping event Odd on Pod no-uid" in dropped[1].getMessage()
        assert dropped[1].exc_info is not None, "a malformed object is logged with its traceback"

    asyncio.run(scenario())


def test_noted_repeats_are_one_event_whose_series_counts_them(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        namespace = await fresh_namespace(client, "noted")
        target = await _configmap(client, namespace, "pod")
        clock = FakeClock()
        recorder = EventRecorder(client, "kapstan-test", clock=clock)

        for batch in range(3):
            recorder.note(target, "Normal", "Nominated", f"Pod should schedule on: nodeclaim/c-{batch}")
        await recorder.flush()
        [event] = await list_events(client, target)
        assert (event["reason"], event["count"]) == ("Nominated", 3)

        # Within SERIES_INTERVAL repeats are only counted; the next one after it writes the series.
        recorder.note(target, "Normal", "Nominated", "Pod should schedule on: nodeclaim/c-3")
        await recorder.flush()
        assert [e["count"] for e in await list_events(client, target)] == [3]
        clock.advance(SERIES_INTERVAL)
        recorder.note(target, "Normal", "Nominated", "Pod should schedule on: nodeclaim/c-4")
        await recorder.flush()
        [event] = await list_events(client, target)
        assert (event["count"], event["series"]["count"]) == (5, 5)
        assert event["message"] == "Pod should schedule on: nodeclaim/c-4"

    asyncio.run(scenario())
