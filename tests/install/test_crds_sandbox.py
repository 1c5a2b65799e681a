"""The CRDs on a real API server: they install and become Established, the article's NodePool and
ClusterAPINodeClass apply unchanged, and what Karpenter rejects is rejected at admission."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kapstan.install.crds import crds
from kapstan.kube.client import Client, Resource
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox
from kapstan.local.apply import install_crds

pytestmark = pytest.mark.sandbox

ARTICLE = Path(__file__).parents[1] / "scenarios" / "article-catalog-mds.yaml"
NODEPOOLS = Resource("karpenter.sh", "v1", "nodepools", "NodePool", namespaced=False)
NODECLAIMS = Resource("karpenter.sh", "v1", "nodeclaims", "NodeClaim", namespaced=False)
NODECLASSES = Resource(
    "karpenter.cluster.x-k8s.io", "v1alpha1", "clusterapinodeclasses", "ClusterAPINodeClass", False
)


def article(kind: str) -> dict[str, Any]:
    return next(d for d in yaml.safe_load_all(ARTICLE.read_text()) if d and d["kind"] == kind)


@pytest.fixture(scope="module")
def kubeconfig(sandbox: Sandbox) -> Iterator[str]:
    """The sandbox's workload cluster with our CRDs installed and Established."""
    path = str(sandbox.workload_kubeconfig)
    asyncio.run(_install(path))
    yield path


async def _install(kubeconfig: str) -> None:
    await install_crds(await Client.connect(kubeconfig), crds())


def test_the_articles_nodepool_and_nodeclass_apply_unchanged(kubeconfig: str) -> None:
    async def scenario() -> dict[str, Any]:
        client = await Client.connect(kubeconfig)
        await client.create(NODECLASSES, article("ClusterAPINodeClass"))
        await client.create(NODEPOOLS, article("NodePool"))
        return await client.get(NODEPOOLS, "default")

    pool = asyncio.run(scenario())
    # Defaults Karpenter would fill in are filled in by the schema.
    assert pool["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}]
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"


def _rejection(kubeconfig: str, resource: Resource, body: dict[str, Any]) -> str:
    async def scenario() -> str:
        client = await Client.connect(kubeconfig)
        with pytest.raises(ApiError) as caught:
            await client.create(resource, body)
        assert caught.value.status == 422, caught.value
        return str(caught.value)

    return asyncio.run(scenario())


def bad_pool(name: str) -> dict[str, Any]:
    pool = copy.deepcopy(article("NodePool"))
    pool["metadata"]["name"] = name
    return pool


def test_an_invalid_operator_and_weight_are_rejected(kubeconfig: str) -> None:
    pool = bad_pool("bad-schema")
    pool["spec"]["weight"] = 0
    pool["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Near"
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "101%"}]
    message = _rejection(kubeconfig, NODEPOOLS, pool)
    assert 'Unsupported value: "Near"' in message
    assert "spec.weight" in message
    assert "budgets[0].nodes" in message


def test_karpenters_cel_rules_are_enforced(kubeconfig: str) -> None:
    pool = bad_pool("bad-cel")
    spec = pool["spec"]["template"]["spec"]
    spec["requirements"] = [
        {"key": "a", "operator": "In", "values": []},
        {"key": "b", "operator": "Gt", "values": ["1", "2"]},
        {"key": "c", "operator": "In", "values": ["x"], "minValues": 2},
    ]
    spec["nodeClassRef"]["name"] = ""
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "1", "schedule": "@daily"}]
    message = _rejection(kubeconfig, NODEPOOLS, pool)
    for expected in [
        "requirements with operator 'In' must have a value defined",
        "must have a single positive integer value",
        "requirements with 'minValues' must have at least that many values",
        "name may not be empty",
        "'schedule' must be set with 'duration'",
    ]:
        assert expected in message


def test_nodeclaim_spec_is_immutable(kubeconfig: str) -> None:
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "immutable"},
        "spec": {
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-8"]}
            ],
            "nodeClassRef": {
                "group": "karpenter.cluster.x-k8s.io",
                "kind": "ClusterAPINodeClass",
                "name": "x",
            },
        },
    }

    async def scenario() -> ApiError:
        client = await Client.connect(kubeconfig)
        created = await client.create(NODECLAIMS, claim)
        created["spec"]["requirements"][0]["values"] = ["c3-16"]
        with pytest.raises(ApiError) as caught:
            await client.replace(NODECLAIMS, created)
        return caught.value

    error = asyncio.run(scenario())
    assert error.status == 422 and "spec is immutable" in str(error)
