"""Flavors from ClusterClass worker classes through a Cluster's topology: an offering per failure domain,
a managed class the topology does not list yet, a topology entry that marks a class, and the errors that
name the Cluster."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from catalog_kit import CAPACITY, catalog_of, md, namespaced, only, sized, template

from kapstan.api import ManifestError, load_text
from kapstan.catalog import FlavorSource, build_catalog

MANAGED = {"annotations": {"kapstan.io/managed": "true"}}
"""A worker class's metadata that marks it for kapstan."""


def worker_class_objects(
    entries: list[dict[str, Any]], class_metadata: dict[str, Any]
) -> list[dict[str, Any]]:
    worker_class = {
        "class": "c3-8",
        "metadata": class_metadata,
        "bootstrap": {
            "templateRef": {
                "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
                "kind": "KubeadmConfigTemplate",
                "name": "w",
            }
        },
        "infrastructure": {
            "templateRef": {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "OpenStackMachineTemplate",
                "name": "c3-8",
            }
        },
    }
    cluster_class = namespaced(
        "cluster.x-k8s.io/v1beta2", "ClusterClass", "cc", {"workers": {"machineDeployments": [worker_class]}}
    )
    topology = {"classRef": {"name": "cc"}, "version": "v1.36.1", "workers": {"machineDeployments": entries}}
    cluster = namespaced("cluster.x-k8s.io/v1beta2", "Cluster", "c1", {"topology": topology})
    return [
        cluster_class,
        cluster,
        template(
            "OpenStackMachineTemplate", "c3-8", {"flavor": "c3-8"}, {"capacity": {"cpu": "4", "memory": "8G"}}
        ),
    ]


def test_worker_class_in_several_failure_domains() -> None:
    entries = [{"class": "c3-8", "name": f"pool-{z}", "failureDomain": z} for z in ("a", "b")]
    catalog = catalog_of(*worker_class_objects(entries, MANAGED))
    instance_type = only(catalog)
    assert instance_type.name == "c3-8" and instance_type.capacity["cpu"] == 4000
    assert catalog.sources[("c3-8", "b", "on-demand")] == FlavorSource(
        "WorkerClass", "capi", "pool-b", "c1", "c3-8"
    )


def test_managed_class_not_yet_in_topology_is_offered_through_a_new_entry() -> None:
    catalog = catalog_of(*worker_class_objects([], MANAGED))
    assert list(catalog.sources.values()) == [FlavorSource("WorkerClass", "capi", "c3-8", "c1", "c3-8")]


def test_topology_entry_can_mark_an_unmarked_class() -> None:
    entries: list[dict[str, Any]] = [
        {"class": "c3-8", "name": "auto", "metadata": {"annotations": {"kapstan.io/managed": "true"}}},
        {"class": "c3-8", "name": "fixed", "replicas": 2},
    ]
    catalog = catalog_of(*worker_class_objects(entries, {}))
    assert [s.name for s in catalog.sources.values()] == ["auto"]


def test_bad_annotation_on_topology_entry_names_the_cluster() -> None:
    entries = [{"class": "c3-8", "name": "auto", "metadata": {"annotations": {CAPACITY + "cpu": "lots"}}}]
    objects = worker_class_objects(entries, MANAGED)
    with pytest.raises(
        ManifestError,
        match=r"^Cluster capi/c1: spec.topology.workers.machineDeployments\[0\]"
        r".metadata.annotations\[capacity.cluster-autoscaler.kubernetes.io/cpu\]",
    ):
        catalog_of(*objects)


def test_topology_with_missing_class() -> None:
    objects = worker_class_objects([], {})[1:]
    with pytest.raises(
        ManifestError, match=r'Cluster capi/c1: spec.topology.classRef: ClusterClass "capi/cc" not found'
    ):
        catalog_of(*objects)


def test_md_generated_by_topology_is_not_counted_twice() -> None:
    generated = md(
        "c1-pool-a-xyz", sized("4", "8G", labels="node.kubernetes.io/instance-type=c3-8"), failure_domain="a"
    )
    generated["metadata"]["labels"] = {"topology.cluster.x-k8s.io/owned": ""}
    entries = [{"class": "c3-8", "name": "pool-a", "failureDomain": "a"}]
    objects = [*worker_class_objects(entries, MANAGED), generated]
    catalog = catalog_of(*objects)
    assert [s.kind for s in catalog.sources.values()] == ["WorkerClass"]


def test_cluster_filter() -> None:
    other = md("other", sized("2", "4Gi"))
    other["spec"]["clusterName"] = "c2"
    manifests = load_text(yaml.safe_dump_all([md("mine", sized("2", "4Gi")), other]))
    assert build_catalog(manifests, ("capi", "c1")).names == ("mine",)
    assert build_catalog(manifests).names == ("mine", "other")
