"""The models ``gather`` keeps between snapshots (``controllers/parsed.py``), and the event loop it hands
back while it parses (the Lease's renewals share that loop)."""

from __future__ import annotations

import asyncio
import copy

from controllers.fake_cluster import world
from kapstan.api.core import Pod
from kapstan.controllers.parsed import ParsedObjects
from kapstan.controllers.state import PARSED_BETWEEN_YIELDS
from kapstan.kube.kinds import PODS


def _pod(version: str, cpu: str = "1") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": version},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }


def test_an_unchanged_object_is_parsed_once_and_a_new_version_again() -> None:
    parsed = ParsedObjects()
    first = parsed.parse(Pod, _pod("7"), "")
    assert parsed.parse(Pod, copy.deepcopy(_pod("7")), "") is first
    changed = parsed.parse(Pod, _pod("8", cpu="2"), "")
    assert changed is not first
    assert (
        changed.spec.containers[0].resources.requests["cpu"]
        != first.spec.containers[0].resources.requests["cpu"]
    )


def test_an_object_without_uid_or_resource_version_is_always_parsed() -> None:
    """A manifest from a file says nothing about being unchanged."""
    parsed = ParsedObjects()
    document = _pod("7")
    del document["metadata"]["resourceVersion"]  # type: ignore[attr-defined]
    assert parsed.parse(Pod, document, "") is not parsed.parse(Pod, document, "")
    assert len(parsed) == 0


def test_what_two_rounds_did_not_use_is_forgotten() -> None:
    parsed = ParsedObjects()
    first = parsed.parse(Pod, _pod("7"), "")
    parsed.next_round()
    assert len(parsed) == 1, "the round before still used it"
    parsed.next_round()
    assert len(parsed) == 0
    assert parsed.parse(Pod, _pod("7"), "") is not first


def test_gather_lets_other_tasks_run_while_it_parses_many_pods() -> None:
    w = world()
    count = 5 * PARSED_BETWEEN_YIELDS
    for index in range(count):
        w.pod(f"web-{index}", "node-a")

    async def scenario() -> list[int]:
        seen: list[int] = []

        async def meanwhile() -> None:
            while True:
                seen.append(len(w.state.parsed))
                await asyncio.sleep(0)

        other = asyncio.create_task(meanwhile())
        await asyncio.sleep(0)
        gathered = await w.state.gather()
        other.cancel()
        assert len(gathered.manifests.workloads) == count
        return seen

    seen = asyncio.run(scenario())
    assert any(0 < parsed < 5 * PARSED_BETWEEN_YIELDS for parsed in seen), "the loop never ran mid-parse"


def test_a_second_gather_reuses_the_models_of_unchanged_pods_and_sees_a_changed_one() -> None:
    w = world()
    w.pod("web-0", "node-a")
    w.pod("web-1", "node-a")
    before = {pod.name: pod for pod in asyncio.run(w.state.gather()).manifests.workloads}
    moved = copy.deepcopy(w.state.pods.store.get("default/web-1"))
    assert moved is not None
    moved["spec"]["nodeName"] = "node-b"
    w.api.put(PODS, moved)
    after = {pod.name: pod for pod in asyncio.run(w.state.gather()).manifests.workloads}
    assert after["web-0"] is before["web-0"]
    assert after["web-1"] is not before["web-1"]
    assert isinstance(after["web-1"], Pod) and after["web-1"].spec.node_name == "node-b"
