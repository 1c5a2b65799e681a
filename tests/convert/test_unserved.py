"""The operator names each karpenter.sh/v1alpha5 object the cluster holds (``unserved``): served and
listed, served but not listable with this credential, not served at all; and its leader does so once per
object, in the log and in a Warning Event on the object, however often it looks."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kapstan.controllers.unserved import NOT_SERVED, UnservedObjects
from kapstan.convert.unserved import unserved_objects
from kapstan.kube.client import Client, Resource
from kapstan.kube.clock import FakeClock
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EVENTS, EventRecorder

PROVISIONERS = Resource("karpenter.sh", "v1alpha5", "provisioners", "Provisioner", namespaced=False)


class Discovery:
    """The two calls ``unserved_objects`` makes, answered from what a test says the server holds."""

    def __init__(self, served: bool, items: list[str] | None) -> None:
        self.served = served
        self.items = items
        self.events: list[dict[str, Any]] = []

    async def resources(self, api_version: str) -> dict[str, Resource]:
        assert api_version == "karpenter.sh/v1alpha5"
        if not self.served:
            raise ApiError("discovering karpenter.sh/v1alpha5: not found", status=404)
        return {"Provisioner": PROVISIONERS}

    async def request(self, method: str, resource: Resource, **_: Any) -> dict[str, Any]:
        assert (method, resource) == ("GET", PROVISIONERS)
        if self.items is None:
            raise ApiError("GET provisioners: forbidden", status=403)
        # As a list answers: the items without apiVersion and kind.
        return {"items": [{"metadata": {"name": name, "uid": f"uid-{name}"}} for name in self.items]}

    async def create(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        assert resource == EVENTS
        self.events.append(body)
        return {**body, "metadata": {**body["metadata"], "namespace": "default"}}


def _lines(fake: Discovery) -> list[str]:
    client: Client = fake  # type: ignore[assignment]
    return asyncio.run(unserved_objects(client, "the workload cluster"))


def test_each_provisioner_is_named() -> None:
    assert _lines(Discovery(served=True, items=["default"])) == [
        "Provisioner default (the workload cluster) is karpenter.sh/v1alpha5, which kapstan does not serve "
        "(it reads karpenter.sh/v1 NodePools): convert it with `kapstan convert -f FILE`"
    ]


def test_a_credential_that_may_not_list_them_still_gets_a_line() -> None:
    (line,) = _lines(Discovery(served=True, items=None))
    assert line.startswith("the workload cluster serves karpenter.sh/v1alpha5 provisioners")


def test_nothing_when_the_version_is_not_served() -> None:
    assert _lines(Discovery(served=False, items=[])) == []


def test_the_leader_names_each_object_once_with_a_warning_event_on_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = Discovery(served=True, items=["default"])
    clock = FakeClock()
    client: Client = fake  # type: ignore[assignment]
    watcher = UnservedObjects(client, EventRecorder(client, clock=clock), clock=clock)
    with caplog.at_level(logging.WARNING, logger="kapstan.controllers.unserved"):
        for _ in range(3):  # three passes over the same Provisioner
            asyncio.run(watcher.look())
        fake.items = ["default", "old"]  # one more applied later
        asyncio.run(watcher.look())
    (first, second) = fake.events
    assert first["involvedObject"] == {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "name": "default",
        "uid": "uid-default",
    }
    assert (first["type"], first["reason"], first["count"]) == ("Warning", NOT_SERVED, 1)
    assert "convert it with `kapstan convert -f FILE`" in first["message"]
    assert second["involvedObject"]["name"] == "old"
    named = [r.getMessage() for r in caplog.records if "karpenter.sh/v1alpha5" in r.getMessage()]
    assert [line.split(" (")[0] for line in named] == ["Provisioner default", "Provisioner old"]


def test_an_unlistable_kind_is_named_once_without_an_event(caplog: pytest.LogCaptureFixture) -> None:
    fake = Discovery(served=True, items=None)
    client: Client = fake  # type: ignore[assignment]
    watcher = UnservedObjects(client, EventRecorder(client))
    with caplog.at_level(logging.WARNING, logger="kapstan.controllers.unserved"):
        asyncio.run(watcher.look())
        asyncio.run(watcher.look())
    assert [r.getMessage().split(",")[0] for r in caplog.records] == [
        "the workload cluster serves karpenter.sh/v1alpha5 provisioners"
    ]
    assert fake.events == []
