"""At start-up the operator names each karpenter.sh/v1alpha5 object the cluster holds (``unserved``):
served and listed, served but not listable with this credential, not served at all."""

from __future__ import annotations

import asyncio
from typing import Any

from kapstan.convert.unserved import unserved_objects
from kapstan.kube.client import Client, Resource
from kapstan.kube.errors import ApiError

PROVISIONERS = Resource("karpenter.sh", "v1alpha5", "provisioners", "Provisioner", namespaced=False)


class Discovery:
    """The two calls ``unserved_objects`` makes, answered from what a test says the server holds."""

    def __init__(self, served: bool, items: list[str] | None) -> None:
        self.served = served
        self.items = items

    async def resources(self, api_version: str) -> dict[str, Resource]:
        assert api_version == "karpenter.sh/v1alpha5"
        if not self.served:
            raise ApiError("discovering karpenter.sh/v1alpha5: not found", status=404)
        return {"Provisioner": PROVISIONERS}

    async def request(self, method: str, resource: Resource, **_: Any) -> dict[str, Any]:
        assert (method, resource) == ("GET", PROVISIONERS)
        if self.items is None:
            raise ApiError("GET provisioners: forbidden", status=403)
        return {"items": [{"metadata": {"name": name}} for name in self.items]}


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
