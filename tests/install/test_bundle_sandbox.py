"""What ``kapstan render`` prints for the Helm-free install is accepted by a real API server: a server-side
apply with ``dryRun=All`` and strict field validation (admission, CAPI's webhooks and schema validation
run, nothing is stored; an unknown or misspelt field fails). Apply rather than create, so objects another
test of the session installed for real (the CRDs) are validated too instead of answering 409."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kapstan.cli import main
from kapstan.install.crds import crds
from kapstan.kube import kinds
from kapstan.kube.client import Client
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox
from kapstan.local.apply import install_crds

pytestmark = pytest.mark.sandbox

DRY_RUN = {"dryRun": "All", "fieldValidation": "Strict", "fieldManager": "kapstan-dry-run"}
# The OpenStack example's provider kinds: Cluster API Provider OpenStack and the kubeadm control plane are
# not installed in the sandbox.
NOT_SERVED = {"OpenStackClusterTemplate", "OpenStackMachineTemplate", "KubeadmControlPlaneTemplate"}


def _render(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["render", *args])
    assert result.exit_code == 0, result.output
    return [d for d in yaml.safe_load_all(result.stdout) if d]


async def _dry_run(kubeconfig: str, docs: list[dict[str, Any]], namespace: str) -> set[str]:
    """Dry-run every document the server serves; returns the kinds it does not serve."""
    client = await Client.connect(kubeconfig)
    await install_crds(client, crds())
    await client.create(kinds.NAMESPACES, {"metadata": {"name": namespace}})
    skipped = set()
    try:
        for doc in docs:
            served = await _served(client, doc["apiVersion"])
            if served is None or doc["kind"] not in served:
                skipped.add(doc["kind"])
                continue
            resource = served[doc["kind"]]
            meta = doc["metadata"]
            try:
                await client.request(
                    "PATCH",
                    resource,
                    namespace=meta.get("namespace"),
                    name=meta["name"],
                    params=DRY_RUN,
                    body=doc,
                    content_type="application/apply-patch+yaml",
                )
            except ApiError as error:
                raise AssertionError(f"{doc['kind']} {meta['name']} rejected: {error}") from error
        return skipped
    finally:
        await client.delete(kinds.NAMESPACES, namespace)


async def _served(client: Client, api_version: str) -> dict[str, Any] | None:
    try:
        return dict(await client.resources(api_version))
    except ApiError as error:
        if error.not_found:
            return None
        raise


def _namespace() -> str:
    return f"render-{uuid.uuid4().hex[:6]}"


def test_rendered_workload_install_passes_a_server_side_dry_run(sandbox: Sandbox) -> None:
    ns = _namespace()
    docs = _render("install", "--namespace", ns, "--cluster", "team-a/prod", "--instance-type", "c3-8")
    assert {d["kind"] for d in docs} >= {
        "CustomResourceDefinition",
        "Deployment",
        "NodePool",
        "ClusterAPINodeClass",
    }
    assert asyncio.run(_dry_run(str(sandbox.kubeconfig), docs, ns)) == set()


def test_rendered_bundle_passes_a_server_side_dry_run(sandbox: Sandbox, tmp_path: Path) -> None:
    ns = _namespace()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    docs = _render(
        "install", "--bundle", "--cluster", f"{ns}/prod", "--management-kubeconfig", str(kubeconfig)
    )
    assert [d["kind"] for d in docs] == [
        "ConfigMap",
        "ConfigMap",
        "Secret",
        "ConfigMap",
        "ClusterResourceSet",
    ]
    assert asyncio.run(_dry_run(str(sandbox.kubeconfig), docs, ns)) == set()


def test_rendered_addon_passes_a_server_side_dry_run(sandbox: Sandbox) -> None:
    ns = _namespace()
    docs = _render("addon", "--management-server", "https://management.example.com:6443", "--namespace", ns)
    assert asyncio.run(_dry_run(str(sandbox.kubeconfig), docs, ns)) == set()


@pytest.mark.parametrize("example", ["sandbox", "openstack"])
def test_rendered_example_clusterclass_passes_a_server_side_dry_run(sandbox: Sandbox, example: str) -> None:
    ns = _namespace()
    docs = _render("clusterclass", "--example", example, "--namespace", ns)
    # The ClusterClass itself goes through CAPI's webhook, which checks the variable's schema and patches.
    skipped = asyncio.run(_dry_run(str(sandbox.kubeconfig), docs, ns))
    assert skipped == (NOT_SERVED if example == "openstack" else set())
