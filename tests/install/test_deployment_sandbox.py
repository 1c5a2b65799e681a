"""The committed install files are valid objects to a real API server: created with a server-side dry run
(``dryRun=All``: admission and validation run, nothing is stored) and strict field validation, so a
misspelled or unknown field fails here rather than being dropped silently at install time."""

from __future__ import annotations

import asyncio
import copy
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from kapstan.kube import kinds
from kapstan.kube.client import Client
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox

INSTALL = Path(__file__).parents[2] / "install"
DRY_RUN = {"dryRun": "All", "fieldValidation": "Strict"}


def _documents(name: str, namespace: str, suffix: str) -> list[dict[str, Any]]:
    """The file's objects, moved into ``namespace`` and with cluster-scoped names made unique, so that a
    real install elsewhere in the session cannot collide with the dry run (nor the dry run with it)."""
    out = []
    for doc in yaml.safe_load_all((INSTALL / name).read_text()):
        if not doc or doc["kind"] == "Namespace":  # the namespace is created for real, below
            continue
        doc = copy.deepcopy(doc)
        meta = doc["metadata"]
        if "namespace" in meta:
            meta["namespace"] = namespace
        else:
            meta["name"] = f"{meta['name']}-{suffix}"
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespace
        if doc["kind"] == "ClusterRoleBinding":
            doc["roleRef"]["name"] = f"{doc['roleRef']['name']}-{suffix}"
        out.append(doc)
    return out


async def _dry_run(kubeconfig: str, name: str) -> list[dict[str, Any]]:
    client = await Client.connect(kubeconfig)
    suffix = uuid.uuid4().hex[:6]
    namespace = f"dry-run-{suffix}"
    await client.create(kinds.NAMESPACES, {"metadata": {"name": namespace}})
    try:
        created = []
        for doc in _documents(name, namespace, suffix):
            resource = (await client.resources(doc["apiVersion"]))[doc["kind"]]
            meta = doc["metadata"]
            try:
                created.append(
                    await client.request(
                        "POST", resource, namespace=meta.get("namespace"), params=DRY_RUN, body=doc
                    )
                )
            except ApiError as error:
                raise AssertionError(
                    f"install/{name}: {doc['kind']} {meta['name']} rejected: {error}"
                ) from error
            # Dry run: admitted, not stored.
            with pytest.raises(ApiError) as missing:
                await client.get(resource, meta["name"], meta.get("namespace"))
            assert missing.value.not_found
        return created
    finally:
        await client.delete(kinds.NAMESPACES, namespace)


@pytest.mark.parametrize("name", ["deployment.yaml", "rbac-workload.yaml", "rbac-management.yaml"])
def test_committed_install_file_passes_a_server_side_dry_run(sandbox: Sandbox, name: str) -> None:
    created = asyncio.run(_dry_run(str(sandbox.kubeconfig), name))
    assert created, f"install/{name} has no objects"


def test_the_deployment_is_admitted_with_its_priority_and_security_settings(sandbox: Sandbox) -> None:
    created = {o["kind"]: o for o in asyncio.run(_dry_run(str(sandbox.kubeconfig), "deployment.yaml"))}
    pod = created["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    # Fields that would have been dropped had the server not known them, and defaults it filled in.
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["livenessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert created["PodDisruptionBudget"]["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
