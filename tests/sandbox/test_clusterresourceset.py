"""ClusterResourceSets apply their ConfigMaps and Secrets to the workload cluster (a separate API server)."""

from __future__ import annotations

from typing import Any

import kr8s
import yaml
from kr8s.objects import ConfigMap, Secret
from sandbox_helpers import ClusterResourceSet, apply, create, get, namespace, wait_for

from kapstan.local import Sandbox
from kapstan.local.manifests import standalone_cluster


def _payload(name: str, value: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value},
        }
    )


def _workload_value(api: kr8s.Api, name: str) -> str | None:
    found: list[Any] = [c for c in get(api, "configmaps", namespace="default") if c.name == name]
    return found[0].raw.get("data", {}).get("v") if found else None


def test_crs_applies_configmap_and_secret_resources_in_the_workload_cluster(
    two_cluster_sandbox: Sandbox,
) -> None:
    mgmt = kr8s.api(kubeconfig=str(two_cluster_sandbox.management_kubeconfig))
    workload = kr8s.api(kubeconfig=str(two_cluster_sandbox.workload_kubeconfig))
    ns = namespace(mgmt, "crs")
    apply(mgmt, standalone_cluster("crs", ns))
    mgmt_cluster = next(iter(get(mgmt, "clusters.cluster.x-k8s.io", "crs", namespace=ns)))
    mgmt_cluster.patch({"metadata": {"labels": {"addons": "yes"}}})

    create(
        mgmt,
        ConfigMap,
        {"metadata": {"name": "once", "namespace": ns}, "data": {"cm.yaml": _payload("from-cm", "1")}},
    )
    secret = create(
        mgmt,
        Secret,
        {
            "metadata": {"name": "reconciled", "namespace": ns},
            "type": "addons.cluster.x-k8s.io/resource-set",
            "stringData": {"cm.yaml": _payload("from-secret", "1")},
        },
    )
    selector = {"matchLabels": {"addons": "yes"}}
    create(
        mgmt,
        ClusterResourceSet,
        {
            "metadata": {"name": "once", "namespace": ns},
            "spec": {
                "clusterSelector": selector,
                "strategy": "ApplyOnce",
                "resources": [{"kind": "ConfigMap", "name": "once"}],
            },
        },
    )
    create(
        mgmt,
        ClusterResourceSet,
        {
            "metadata": {"name": "reconciled", "namespace": ns},
            "spec": {
                "clusterSelector": selector,
                "strategy": "Reconcile",
                "resources": [{"kind": "Secret", "name": "reconciled"}],
            },
        },
    )

    wait_for("from-cm in the workload cluster", lambda: _workload_value(workload, "from-cm") == "1")
    wait_for("from-secret in the workload cluster", lambda: _workload_value(workload, "from-secret") == "1")
    # Two API servers: the management cluster did not receive them.
    assert _workload_value(mgmt, "from-cm") is None

    # Reconcile re-applies a changed resource; ApplyOnce would not.
    secret.patch({"stringData": {"cm.yaml": _payload("from-secret", "2")}})
    wait_for("from-secret updated", lambda: _workload_value(workload, "from-secret") == "2", timeout=180)
