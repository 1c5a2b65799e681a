"""Builders of catalog sources for the catalog tests: any namespaced object, a managed MD, its
infrastructure template, capacity annotations, and the catalog of a few objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kapstan.api import load_text
from kapstan.catalog import Catalog, build_catalog
from kapstan.scheduling.model import InstanceType

SCENARIOS = Path(__file__).parents[1] / "scenarios"
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
GI = 2**30 * 1000


def namespaced(
    api_version: str,
    kind: str,
    name: str,
    spec: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    **more: Any,
) -> dict[str, Any]:
    """An object ``name`` in the tests' namespace ``capi``; ``metadata`` adds to its metadata (annotations,
    labels), ``more`` adds top-level fields (``status``)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "capi", **(metadata or {})},
        "spec": spec,
        **more,
    }


def md(
    name: str,
    annotations: dict[str, str] | None = None,
    *,
    managed: bool = True,
    failure_domain: str = "",
    infra_kind: str = "OpenStackMachineTemplate",
) -> dict[str, Any]:
    marker = {"kapstan.io/managed": "true"} if managed else {}
    spec = {
        "clusterName": "c1",
        "template": {
            "spec": {
                "failureDomain": failure_domain,
                "bootstrap": {
                    "configRef": {
                        "apiGroup": "bootstrap.cluster.x-k8s.io",
                        "kind": "KubeadmConfigTemplate",
                        "name": name,
                    }
                },
                "infrastructureRef": {
                    "apiGroup": "infrastructure.cluster.x-k8s.io",
                    "kind": infra_kind,
                    "name": name,
                },
            }
        },
    }
    metadata = {"annotations": {**marker, **(annotations or {})}}
    return namespaced("cluster.x-k8s.io/v1beta2", "MachineDeployment", name, spec, metadata)


def template(
    kind: str, name: str, spec: dict[str, Any], status: dict[str, Any] | None = None
) -> dict[str, Any]:
    return namespaced(
        "infrastructure.cluster.x-k8s.io/v1beta1",
        kind,
        name,
        {"template": {"spec": spec}},
        status=status or {},
    )


def sized(cpu: str, memory: str, **more: str) -> dict[str, str]:
    return {CAPACITY + "cpu": cpu, CAPACITY + "memory": memory, **{CAPACITY + k: v for k, v in more.items()}}


def catalog_of(*objects: dict[str, Any]) -> Catalog:
    return build_catalog(load_text(yaml.safe_dump_all(objects)))


def only(catalog: Catalog) -> InstanceType:
    (instance_type,) = catalog.instance_types()
    return instance_type
