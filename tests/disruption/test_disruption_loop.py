"""The disruption loop against in-memory stores and a recording client: a recorded command is finished
or rolled back from what the cluster shows (what a restarted operator sees), and an empty node is
deleted only after the validation delay, exactly it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from disruption_helpers import stamp

from kapstan.controllers.disruption import Disruption, DisruptionOptions
from kapstan.controllers.disruption.command import COMMAND_ANNOTATION, REPLACEMENT_ANNOTATION, Command
from kapstan.controllers.state import ClusterRef, ClusterState
from kapstan.kube.client import Object, Resource
from kapstan.kube.clock import FakeClock
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODECLAIMS, NODES

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}


class RecordingClient:
    """Answers reads from the state's stores and records every write."""

    def __init__(self) -> None:
        self.state: ClusterState | None = None
        self.writes: list[tuple[str, str, str, Any]] = []

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        assert self.state is not None
        store = {NODES.plural: self.state.nodes.store, NODECLAIMS.plural: self.state.node_claims.store}
        found = store[resource.plural].get(name) if resource.plural in store else None
        if found is None:
            raise ApiError(f"{resource.plural} {name} not found", status=404)
        return found

    async def patch(self, resource: Resource, name: str, patch: Any, **_: Any) -> Object:
        self.writes.append(("patch", resource.plural, name, patch))
        return {"metadata": {"name": name}}

    async def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        self.writes.append(("delete", resource.plural, name, None))
        return {}

    async def create(self, resource: Resource, body: Object) -> Object:
        self.writes.append(("create", resource.plural, body["metadata"]["name"], body))
        return body

    async def request(self, *args: Any, **kwargs: Any) -> Object:
        return {"items": []}


class RecordingEvents:
    def __init__(self) -> None:
        self.emitted: list[tuple[str, str, str]] = []

    async def emit(self, obj: Object, kind: str, reason: str, message: str) -> None:
        self.emitted.append((obj["metadata"]["name"], reason, message))


def _world() -> tuple[ClusterState, RecordingClient, RecordingEvents]:
    client = RecordingClient()
    state = ClusterState(client, client, ClusterRef("ns", "cluster"))  # type: ignore[arg-type]
    client.state = state
    state.node_pools.store.upsert(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "pool", "uid": "p"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.cluster.x-k8s.io",
                            "kind": "ClusterAPINodeClass",
                            "name": "nc",
                        },
                        "expireAfter": "Never",
                    }
                },
                "disruption": {
                    "consolidationPolicy": "WhenEmpty",
                    "consolidateAfter": "30s",
                    "budgets": [{"nodes": "100%"}],
                },
            },
        }
    )
    return state, client, RecordingEvents()


def _add_claim(
    state: ClusterState,
    name: str,
    *,
    annotations: dict[str, str] | None = None,
    initialized: datetime | None = NOW - timedelta(hours=1),
    deleting: bool = False,
    tainted: bool = False,
) -> None:
    conditions = (
        [{"type": "Initialized", "status": "True", "lastTransitionTime": stamp(initialized)}]
        if initialized
        else []
    )
    meta: dict[str, Any] = {
        "name": name,
        "uid": name,
        "resourceVersion": "1",
        "creationTimestamp": stamp(NOW - timedelta(hours=2)),
        "labels": {
            "karpenter.sh/nodepool": "pool",
            "node.kubernetes.io/instance-type": "c3-4",
            "topology.kubernetes.io/zone": "nova",
        },
        "annotations": {"kapstan.io/price-per-hour": "0.1", **(annotations or {})},
    }
    if deleting:
        meta["deletionTimestamp"] = stamp(NOW)
    state.node_claims.store.upsert(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": meta,
            "spec": {},
            "status": {"nodeName": f"node-{name}", "conditions": conditions},
        }
    )
    state.nodes.store.upsert(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{name}", "uid": f"node-{name}", "resourceVersion": "1"},
            "spec": {"taints": [DISRUPTED] if tainted else []},
        }
    )
    state.machines.store.upsert(
        {
            "metadata": {
                "name": f"machine-{name}",
                "namespace": "ns",
                "annotations": {"kapstan.io/nodeclaim": name},
                "labels": {"cluster.x-k8s.io/deployment-name": "pool"},
            },
            "spec": {},
        }
    )


def _command(**fields: Any) -> Command:
    base: dict[str, Any] = {
        "id": "c1",
        "reason": "underutilized",
        "kind": "replace",
        "candidates": ("old",),
        "replacements": ("new",),
        "started": stamp(NOW),
    }
    return Command(**{**base, **fields})


def _disruption(state: ClusterState, events: RecordingEvents, clock: FakeClock | None = None) -> Disruption:
    return Disruption(state, events, DisruptionOptions(), clock=clock or FakeClock(), wall=lambda: NOW)  # type: ignore[arg-type]


def test_a_replace_whose_replacement_never_appeared_is_rolled_back() -> None:
    """The operator died after recording the command and before creating the replacement."""
    state, client, events = _world()
    _add_claim(state, "old", annotations={COMMAND_ANNOTATION: _command().encode()}, tainted=True)
    asyncio.run(_disruption(state, events).reconcile())
    assert ("delete", "nodeclaims", "new", None) in client.writes
    untaint = [w for w in client.writes if w[:3] == ("patch", "nodes", "node-old")]
    assert untaint and untaint[-1][3]["spec"]["taints"] == []
    assert (
        "patch",
        "nodeclaims",
        "old",
        {"metadata": {"annotations": {COMMAND_ANNOTATION: None}}},
    ) in client.writes
    assert not any(w[0] == "delete" and w[2] == "old" for w in client.writes)
    assert [e[1] for e in events.emitted] == ["DisruptionRolledBack"]


def test_a_replace_whose_replacements_are_initialized_deletes_its_candidates() -> None:
    state, client, events = _world()
    _add_claim(state, "old", annotations={COMMAND_ANNOTATION: _command().encode()}, tainted=True)
    _add_claim(state, "new", annotations={REPLACEMENT_ANNOTATION: "c1"})
    asyncio.run(_disruption(state, events).reconcile())
    assert [w[:3] for w in client.writes if w[0] == "delete"] == [("delete", "nodeclaims", "old")]
    assert ("old", "DisruptionTerminating") in [(e[0], e[1]) for e in events.emitted]


def test_a_replace_waits_for_replacements_that_are_not_initialized_yet() -> None:
    state, client, events = _world()
    _add_claim(state, "old", annotations={COMMAND_ANNOTATION: _command().encode()}, tainted=True)
    _add_claim(state, "new", annotations={REPLACEMENT_ANNOTATION: "c1"}, initialized=None)
    asyncio.run(_disruption(state, events).reconcile())
    assert not any(w[0] == "delete" for w in client.writes)


def test_a_replacement_that_failed_rolls_the_command_back() -> None:
    state, client, events = _world()
    _add_claim(state, "old", annotations={COMMAND_ANNOTATION: _command().encode()}, tainted=True)
    _add_claim(state, "new", annotations={REPLACEMENT_ANNOTATION: "c1"}, initialized=None, deleting=True)
    asyncio.run(_disruption(state, events).reconcile())
    assert (
        "patch",
        "nodeclaims",
        "old",
        {"metadata": {"annotations": {COMMAND_ANNOTATION: None}}},
    ) in client.writes


def test_a_recorded_delete_is_finished_and_a_finished_replace_releases_its_replacements() -> None:
    state, client, events = _world()
    _add_claim(
        state,
        "empty",
        annotations={
            COMMAND_ANNOTATION: _command(
                id="c2", kind="delete", reason="empty", candidates=("empty",), replacements=()
            ).encode()
        },
    )
    # c1's candidate is gone: its replacement becomes an ordinary NodeClaim.
    _add_claim(state, "new", annotations={REPLACEMENT_ANNOTATION: "c1"})
    asyncio.run(_disruption(state, events).reconcile())
    assert ("delete", "nodeclaims", "empty", None) in client.writes
    assert (
        "patch",
        "nodeclaims",
        "new",
        {"metadata": {"annotations": {REPLACEMENT_ANNOTATION: None}}},
    ) in client.writes


def test_an_empty_node_goes_after_consolidate_after_and_the_validation_delay_and_only_it() -> None:
    state, client, events = _world()
    _add_claim(state, "idle", initialized=NOW - timedelta(seconds=31))
    _add_claim(state, "fresh", initialized=NOW - timedelta(seconds=10))
    clock = FakeClock()
    disruption = _disruption(state, events, clock)

    async def scenario() -> None:
        task = asyncio.ensure_future(disruption.reconcile())
        for _ in range(50):
            await asyncio.sleep(0)
        assert not any(w[0] == "delete" for w in client.writes)  # validating
        clock.advance(15.0)
        assert await task
        await asyncio.sleep(0)

    asyncio.run(scenario())
    deletes = [w[2] for w in client.writes if w[0] == "delete"]
    assert deletes == ["idle"]
    recorded = [
        w
        for w in client.writes
        if w[:3] == ("patch", "nodeclaims", "idle") and "annotations" in w[3].get("metadata", {})
    ]
    command = Command.decode(recorded[0][3]["metadata"]["annotations"][COMMAND_ANNOTATION])
    assert command is not None and (command.reason, command.kind, command.candidates) == (
        "empty",
        "delete",
        ("idle",),
    )


def test_a_zero_budget_keeps_an_empty_node() -> None:
    state, client, events = _world()
    pool = state.node_pools.store.get("pool")
    assert pool is not None
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "0"}]
    _add_claim(state, "idle", initialized=NOW - timedelta(minutes=5))
    assert asyncio.run(_disruption(state, events).reconcile()) is False
    assert not any(w[0] == "delete" for w in client.writes)


def test_a_replace_whose_replacements_do_not_initialize_in_time_is_rolled_back() -> None:
    state, client, events = _world()
    late = _command(started=stamp(NOW - timedelta(seconds=1201)))
    _add_claim(state, "old", annotations={COMMAND_ANNOTATION: late.encode()}, tainted=True)
    _add_claim(state, "new", annotations={REPLACEMENT_ANNOTATION: "c1"}, initialized=None)
    asyncio.run(_disruption(state, events).reconcile())
    assert ("delete", "nodeclaims", "new", None) in client.writes
    assert [e[1] for e in events.emitted] == ["DisruptionRolledBack"]


def test_a_delete_the_cache_has_not_seen_yet_is_not_sent_or_counted_twice() -> None:
    state, client, events = _world()
    recorded = _command(id="c2", kind="delete", reason="empty", candidates=("empty",), replacements=())
    _add_claim(state, "empty", annotations={COMMAND_ANNOTATION: recorded.encode()})
    disruption = _disruption(state, events)
    asyncio.run(disruption.reconcile())
    asyncio.run(disruption.reconcile())  # the watch has not brought the deletionTimestamp back yet
    assert [w[:3] for w in client.writes if w[0] == "delete"] == [("delete", "nodeclaims", "empty")]
