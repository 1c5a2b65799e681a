"""The addon's reconcile against a fake API client: what it writes and deletes, and in which order.

The e2e test (tests/e2e/test_install.py) runs the same code against real API servers; these pin down
the ordering guarantees a real server would not show: the label comes last on the way in (the CRS may
select the Cluster only once everything it names exists) and goes last on the way out (a failure in
between is retried), and the ClusterResourceSet goes first on the way out.
"""

from __future__ import annotations

import asyncio
import base64
import copy
from typing import Any

import pytest
import yaml

from kapstan.addon import Addon, AddonOptions
from kapstan.addon import controller as addon_controller
from kapstan.api.wellknown import AUTOSCALER_LABEL, OWNER_CLUSTER_LABEL
from kapstan.capi import contract as c
from kapstan.install import bundle, examples, rbac
from kapstan.kube.client import Object, Resource
from kapstan.kube.controller import Result
from kapstan.kube.errors import ApiError

NS = "team-a"
NAME = "prod"
Key = tuple[str, str | None, str]


class FakeClient:
    """Objects by (plural, namespace, name); every write is recorded as (verb, plural, name[, detail])."""

    def __init__(self, objects: list[tuple[Resource, Object]] = ()) -> None:  # type: ignore[assignment]
        self.objects: dict[Key, Object] = {}
        self.calls: list[tuple[Any, ...]] = []
        for resource, obj in objects:
            meta = obj["metadata"]
            self.objects[(resource.plural, meta.get("namespace"), meta["name"])] = copy.deepcopy(obj)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        try:
            return copy.deepcopy(self.objects[(resource.plural, namespace, name)])
        except KeyError:
            raise ApiError(f"{resource.plural} {name} not found", status=404) from None

    async def patch(
        self, resource: Resource, name: str, patch: Object, *, namespace: str | None = None, **_: Any
    ) -> Object:
        obj = self.objects[(resource.plural, namespace, name)]
        labels = obj["metadata"].setdefault("labels", {})
        for key, value in patch.get("metadata", {}).get("labels", {}).items():
            if value is None:
                labels.pop(key, None)
            else:
                labels[key] = value
        self.calls.append(("patch", resource.plural, name, patch))
        return obj

    async def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return await self.request("DELETE", resource, namespace=namespace, name=name)

    async def request(
        self,
        method: str,
        resource: Resource,
        *,
        namespace: str | None = None,
        name: str = "",
        params: dict[str, str] | None = None,
        body: Object | None = None,
        **_: Any,
    ) -> Object:
        key = (resource.plural, namespace, name)
        if method == "PATCH":  # server-side apply
            assert params == {"fieldManager": addon_controller.FIELD_MANAGER, "force": "true"}
            assert body is not None
            self.objects[key] = {**self.objects.get(key, {}), **copy.deepcopy(body)}
            self.calls.append(("apply", resource.plural, name))
            return body
        if method == "DELETE":
            self.calls.append(("delete", resource.plural, name, (params or {}).get("propagationPolicy")))
            if key not in self.objects:
                raise ApiError(f"{resource.plural} {name} not found", status=404)
            if self.objects[key]["metadata"].get("finalizers"):  # deleting, until the finalizer goes
                self.objects[key]["metadata"]["deletionTimestamp"] = "now"
            else:
                del self.objects[key]
            return {}
        raise AssertionError(f"unexpected {method} {resource.plural}")


def _cluster(value: dict[str, Any] | None, labels: dict[str, str] | None = None) -> Object:
    cluster = examples.cluster(NAME, NS, "kapstan-sandbox", "v1.33.1", value)
    cluster["metadata"].update(uid="uid-1", labels=dict(labels or {}))
    return cluster


def _setup(cluster: Object, *extra: tuple[Resource, Object]) -> tuple[Addon, FakeClient]:
    (class_,) = [d for d in examples.sandbox(NS) if d["kind"] == "ClusterClass"]
    client = FakeClient([(c.CLUSTERS, cluster), (c.CLUSTERCLASSES, class_), *extra])
    addon = Addon(client, AddonOptions("https://management:6443"))  # type: ignore[arg-type]
    addon.clusters.store.upsert(cluster)
    return addon, client


def _fill_token(client: FakeClient) -> None:
    token = client.objects[("secrets", NS, f"{rbac.management_name(NAME)}-token")]
    token["data"] = {"token": base64.b64encode(b"t0ken").decode(), "ca.crt": "Q0E="}


def test_enabling_writes_the_credential_then_the_bundle_then_the_label() -> None:
    addon, client = _setup(_cluster({"enabled": True, "workerClasses": ["c3-8"]}))
    # The token controller has not filled the token in yet: come back soon, no bundle, no label.
    assert asyncio.run(addon.reconcile(f"{NS}/{NAME}")) == Result(requeue_after=addon_controller.TOKEN_WAIT)
    assert not any(call[0] == "patch" for call in client.calls)
    assert ("clusterresourcesets", NS, bundle.bundle_name(NAME)) not in client.objects
    _fill_token(client)
    assert asyncio.run(addon.reconcile(f"{NS}/{NAME}")) == Result(requeue_after=addon_controller.RESYNC)
    assert client.calls[-1] == (
        "patch",
        "clusters",
        NAME,
        {"metadata": {"labels": {AUTOSCALER_LABEL: NAME}}},
    )
    applied = [call[1:3] for call in client.calls if call[0] == "apply"]
    assert applied.index(("clusterresourcesets", bundle.bundle_name(NAME))) == len(applied) - 1
    role = client.objects[("roles", NS, rbac.management_name(NAME))]
    # The infrastructure group comes from the ClusterClass's worker templates.
    assert role["rules"] == rbac.management_rules(NAME, "infrastructure.kapstan.dev")
    for key, obj in client.objects.items():
        if key[0] not in ("clusters", "clusterclasses"):
            assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-1", key
            assert obj["metadata"]["labels"][OWNER_CLUSTER_LABEL] == NAME, key
    credential = client.objects[("secrets", NS, f"{bundle.bundle_name(NAME)}-credentials")]
    delivered = yaml.safe_load(base64.b64decode(credential["data"]["credentials.yaml"]))
    kubeconfig = yaml.safe_load(base64.b64decode(delivered["data"]["kubeconfig"]))
    assert kubeconfig["users"][0]["user"] == {"token": "t0ken"}
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://management:6443"


@pytest.mark.parametrize(
    "cluster",
    [
        _cluster(None),
        _cluster({"enabled": False}),
        {"metadata": {"name": NAME, "namespace": NS, "uid": "uid-1"}, "spec": {}},
        {
            **_cluster({"enabled": True}),
            "metadata": {"name": NAME, "namespace": NS, "deletionTimestamp": "now"},
        },
    ],
    ids=["no-variable", "off", "no-topology", "deleting"],
)
def test_a_cluster_that_is_not_and_was_not_autoscaled_is_left_alone(cluster: Object) -> None:
    addon, client = _setup(cluster)
    assert asyncio.run(addon.reconcile(f"{NS}/{NAME}")) == Result()
    assert client.calls == []


def test_disabling_deletes_the_crs_first_the_workload_install_then_the_credential_and_the_label_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    addon, client = _setup(_cluster({"enabled": True}))
    asyncio.run(addon.reconcile(f"{NS}/{NAME}"))
    _fill_token(client)
    asyncio.run(addon.reconcile(f"{NS}/{NAME}"))
    kubeconfig = {"data": {"value": base64.b64encode(b"apiVersion: v1\nkind: Config\n").decode()}}
    client.objects[("secrets", NS, f"{NAME}-kubeconfig")] = {
        "metadata": {"name": f"{NAME}-kubeconfig"},
        **kubeconfig,
    }
    workload = FakeClient()
    connected: list[str] = []

    async def connect(path: str) -> FakeClient:
        with open(path) as handle:
            connected.append(handle.read())
        return workload

    monkeypatch.setattr(addon_controller.Client, "connect", connect)
    off = _cluster({"enabled": False}, labels={AUTOSCALER_LABEL: NAME})
    addon.clusters.store.upsert(off)
    client.calls.clear()
    assert asyncio.run(addon.reconcile(f"{NS}/{NAME}")) == Result()
    assert connected == ["apiVersion: v1\nkind: Config\n"]
    assert client.calls[0] == ("delete", "clusterresourcesets", bundle.bundle_name(NAME), None)
    assert client.calls[-1] == (
        "patch",
        "clusters",
        NAME,
        {"metadata": {"labels": {AUTOSCALER_LABEL: None}}},
    )
    left = {
        k
        for k in client.objects
        if k[0] not in ("clusters", "clusterclasses") and k[2] != f"{NAME}-kubeconfig"
    }
    assert left == set()
    assert [call[1:] for call in workload.calls] == [
        ("clusterrolebindings", rbac.NAME, None),
        ("clusterroles", rbac.NAME, None),
        ("namespaces", rbac.DEFAULT_NAMESPACE, None),
        ("nodepools", bundle.DEFAULT_NODEPOOL, "Orphan"),
        ("clusterapinodeclasses", bundle.DEFAULT_NODEPOOL, "Orphan"),
    ]
    # Nothing left to do: a second reconcile of the unlabelled Cluster writes nothing.
    addon.clusters.store.upsert(_cluster({"enabled": False}))
    client.calls.clear()
    asyncio.run(addon.reconcile(f"{NS}/{NAME}"))
    assert client.calls == []


def test_a_failed_workload_cleanup_keeps_the_label_for_the_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = {"metadata": {"name": f"{NAME}-kubeconfig", "namespace": NS}, "data": {"value": "eA=="}}
    addon, client = _setup(
        _cluster({"enabled": False}, labels={AUTOSCALER_LABEL: NAME}), (addon_controller.SECRETS, secret)
    )

    async def unreachable(path: str) -> FakeClient:
        raise ApiError("connecting: connection refused")

    monkeypatch.setattr(addon_controller.Client, "connect", unreachable)
    with pytest.raises(ApiError):
        asyncio.run(addon.reconcile(f"{NS}/{NAME}"))
    assert client.objects[("clusters", NS, NAME)]["metadata"]["labels"] == {AUTOSCALER_LABEL: NAME}


def test_disabling_waits_for_the_crs_finalizer_before_touching_the_workload_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crs = {
        "metadata": {
            "name": bundle.bundle_name(NAME),
            "namespace": NS,
            "finalizers": ["addons.cluster.x-k8s.io"],
        }
    }
    cluster = _cluster({"enabled": False}, labels={AUTOSCALER_LABEL: NAME})
    addon, client = _setup(cluster, (addon_controller.CLUSTERRESOURCESETS, crs))

    async def connect(path: str) -> FakeClient:
        raise AssertionError("the workload cluster was touched while the CRS could still apply")

    monkeypatch.setattr(addon_controller.Client, "connect", connect)
    result = asyncio.run(addon.reconcile(f"{NS}/{NAME}"))
    assert result == Result(requeue_after=addon_controller.CRS_WAIT)
    assert [call[0] for call in client.calls] == ["delete"]
    assert client.objects[("clusters", NS, NAME)]["metadata"]["labels"] == {AUTOSCALER_LABEL: NAME}


def test_a_given_management_ca_replaces_the_clusters_own_in_the_delivered_kubeconfig() -> None:
    addon, client = _setup(_cluster({"enabled": True}))
    addon.options = AddonOptions("https://lb.example.com", ca_data="TEItQ0E=")
    asyncio.run(addon.reconcile(f"{NS}/{NAME}"))
    _fill_token(client)
    asyncio.run(addon.reconcile(f"{NS}/{NAME}"))
    credential = client.objects[("secrets", NS, f"{bundle.bundle_name(NAME)}-credentials")]
    delivered = yaml.safe_load(base64.b64decode(credential["data"]["credentials.yaml"]))
    kubeconfig = yaml.safe_load(base64.b64decode(delivered["data"]["kubeconfig"]))
    assert kubeconfig["clusters"][0]["cluster"] == {
        "server": "https://lb.example.com",
        "certificate-authority-data": "TEItQ0E=",
    }
