"""Flavors from managed MDs and infrastructure templates; zones, prices, reservations, and the errors a
user gets when a source says too little or contradicts another. Worker classes and Cluster topologies are
in test_catalog_topology.py."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from catalog_kit import CAPACITY, GI, SCENARIOS, catalog_of, md, namespaced, only, sized, template

from kapstan.api import ManifestError, load_manifests, load_text
from kapstan.catalog import FlavorSource, build_catalog, node_class_settings, relative_price
from kapstan.scheduling.model import InstanceType, Offering, Taint


def test_article_mds() -> None:
    catalog = build_catalog(load_manifests([SCENARIOS / "article-catalog-mds.yaml"]))
    c3_4, c3_8, c3_16 = catalog.instance_types()
    assert (c3_4.name, c3_8.name, c3_16.name) == ("c3-4", "c3-8", "c3-16")
    assert c3_4.capacity == {"cpu": 2000, "memory": 4 * 10**12, "pods": 110_000}
    assert c3_4.allocatable == c3_4.capacity  # an empty NodeClass reserves nothing
    assert c3_16.capacity["memory"] == 16 * 10**12
    assert c3_4.labels == {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "c3-4",
    }
    assert c3_4.offerings == (Offering("nova", "on-demand", relative_price(c3_4.capacity)),)
    assert c3_4.taints == ()  # the unregistered taint is kapstan's own, not the flavor's
    assert catalog.sources[("c3-8", "nova", "on-demand")] == FlavorSource(
        "MachineDeployment", "default", "capi-ovh-karpenter-c3-8", "capi-ovh"
    )


def test_article_worker_classes_match_the_mds() -> None:
    from_mds = build_catalog(load_manifests([SCENARIOS / "article-catalog-mds.yaml"]))
    from_classes = build_catalog(load_manifests([SCENARIOS / "article-catalog-clusterclass.yaml"]))
    assert from_classes.instance_types() == from_mds.instance_types()
    # default-worker is in the topology but not marked managed
    assert sorted(from_classes.sources.values(), key=lambda s: s.name)[0] == FlavorSource(
        "WorkerClass", "default", "karpenter-c3-16", "capi-ovh", "c3-16"
    )


def test_unmarked_md_is_not_a_flavor() -> None:
    assert catalog_of(md("plain", sized("2", "4Gi"), managed=False)).flavors == ()


def test_karpenter_member_label_marks_md() -> None:
    obj = md("member", sized("2", "4Gi"), managed=False)
    obj["metadata"]["labels"] = {"node.cluster.x-k8s.io/karpenter-member": ""}
    assert only(catalog_of(obj)).name == "member"  # no instance-type label, no template: the MD's name


def test_capacity_from_template_status_and_flavor_name_from_template() -> None:
    status = {"capacity": {"cpu": "4", "memory": "16Gi"}, "nodeInfo": {"architecture": "arm64"}}
    instance_type = only(
        catalog_of(
            md("md-a", failure_domain="az1", infra_kind="AWSMachineTemplate"),
            template("AWSMachineTemplate", "md-a", {"instanceType": "m7g.xlarge"}, status),
        )
    )
    assert instance_type.name == "m7g.xlarge"
    assert instance_type.capacity == {"cpu": 4000, "memory": 16 * GI, "pods": 110_000}
    assert instance_type.labels["kubernetes.io/arch"] == "arm64"
    assert instance_type.offerings[0].zone == "az1"


def test_md_without_failure_domain_or_zone_label_gets_default_zone() -> None:
    assert only(catalog_of(md("md-a", sized("2", "4Gi")))).offerings[0].zone == "default"


def test_annotations_win_over_template_per_resource() -> None:
    status = {"capacity": {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "100Gi"}}
    instance_type = only(
        catalog_of(
            md("md-a", {CAPACITY + "memory": "15Gi"}, infra_kind="OpenStackMachineTemplate"),
            template("OpenStackMachineTemplate", "md-a", {"flavor": "b3-16"}, status),
        )
    )
    assert instance_type.capacity == {
        "cpu": 4000,
        "memory": 15 * GI,
        "ephemeral-storage": 100 * GI,
        "pods": 110_000,
    }


def test_vsphere_size_fields() -> None:
    spec = {"numCPUs": 4, "memoryMiB": 8192, "diskGiB": 40}
    instance_type = only(
        catalog_of(
            md("md-v", infra_kind="VSphereMachineTemplate"), template("VSphereMachineTemplate", "md-v", spec)
        )
    )
    assert instance_type.name == "md-v"
    assert instance_type.capacity == {
        "cpu": 4000,
        "memory": 8 * GI,
        "ephemeral-storage": 40 * GI,
        "pods": 110_000,
    }


def test_gpu_labels_taints_max_pods_and_disk() -> None:
    annotations = sized(
        "16",
        "64Gi",
        **{
            "gpu-count": "2",
            "gpu-type": "nvidia.com/gpu",
            "maxPods": "58",
            "ephemeral-disk": "200Gi",
            "labels": "node.kubernetes.io/instance-type=g1-16, gpu=true,karpenter.sh/capacity-type=spot",
            "taints": "nvidia.com/gpu=present:NoSchedule,dedicated:NoExecute",
        },
    )
    instance_type = only(catalog_of(md("gpu", annotations)))
    assert instance_type.name == "g1-16"
    assert instance_type.capacity == {
        "cpu": 16_000,
        "memory": 64 * GI,
        "nvidia.com/gpu": 2000,
        "pods": 58_000,
        "ephemeral-storage": 200 * GI,
    }
    assert instance_type.labels["gpu"] == "true" and "karpenter.sh/capacity-type" not in instance_type.labels
    assert instance_type.offerings[0].capacity_type == "spot"
    assert instance_type.taints == (
        Taint("nvidia.com/gpu", "NoSchedule", "present"),
        Taint("dedicated", "NoExecute"),
    )
    assert instance_type.offerings[0].price == pytest.approx(16 + 64 / 4 + 8 * 2)


def test_gpu_model_name_becomes_product_label() -> None:
    instance_type = only(
        catalog_of(md("gpu", sized("8", "32Gi", **{"gpu-count": "1", "gpu-type": "tesla-t4"})))
    )
    assert instance_type.capacity["nvidia.com/gpu"] == 1000
    assert instance_type.labels["nvidia.com/gpu.product"] == "tesla-t4"


def test_bootstrap_taints_join_the_flavor_but_not_unregistered() -> None:
    taints = [
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
        {"key": "team", "value": "ml", "effect": "NoSchedule"},
    ]
    spec = {"template": {"spec": {"joinConfiguration": {"nodeRegistration": {"taints": taints}}}}}
    kct = namespaced("bootstrap.cluster.x-k8s.io/v1beta2", "KubeadmConfigTemplate", "md-a", spec)
    assert only(catalog_of(md("md-a", sized("2", "4Gi")), kct)).taints == (Taint("team", "NoSchedule", "ml"),)


def test_one_flavor_in_several_zones_is_one_instance_type() -> None:
    zoned = [
        md(
            f"c3-8-{zone}",
            sized("4", "8G", labels="node.kubernetes.io/instance-type=c3-8"),
            failure_domain=zone,
        )
        for zone in ("gra1", "gra2", "gra3")
    ]
    catalog = catalog_of(*zoned)
    instance_type = only(catalog)
    assert [o.zone for o in instance_type.offerings] == ["gra1", "gra2", "gra3"]
    assert catalog.sources[("c3-8", "gra2", "on-demand")].name == "c3-8-gra2"


def test_conflicting_capacity_for_one_flavor() -> None:
    label = "node.kubernetes.io/instance-type=c3-8"
    with pytest.raises(
        ManifestError,
        match=r'MachineDeployment capi/b: flavor "c3-8" has capacity .* but .* in '
        r"MachineDeployment capi/a",
    ):
        catalog_of(
            md("a", sized("4", "8G", labels=label), failure_domain="z1"),
            md("b", sized("8", "8G", labels=label), failure_domain="z2"),
        )


def test_two_sources_for_the_same_offering() -> None:
    label = "node.kubernetes.io/instance-type=c3-8"
    with pytest.raises(
        ManifestError, match=r'flavor "c3-8" in zone "default" \(on-demand\) is also provided by'
    ):
        catalog_of(md("a", sized("4", "8G", labels=label)), md("b", sized("4", "8G", labels=label)))


def test_md_without_capacity_source_names_md_and_annotations() -> None:
    with pytest.raises(ManifestError) as caught:
        catalog_of(md("bare"), template("OpenStackMachineTemplate", "bare", {"flavor": "c3-4"}))
    assert str(caught.value) == (
        "MachineDeployment capi/bare: metadata.annotations: no cpu or memory capacity for this flavor: set the "
        "annotations capacity.cluster-autoscaler.kubernetes.io/cpu and capacity.cluster-autoscaler.kubernetes.io/"
        "memory, or give OpenStackMachineTemplate capi/bare a status.capacity"
    )


def test_malformed_capacity_annotation_names_it() -> None:
    with pytest.raises(
        ManifestError,
        match=r"^MachineDeployment capi/a: metadata.annotations\["
        r"capacity.cluster-autoscaler.kubernetes.io/memory\]: invalid quantity '4 GB'",
    ):
        catalog_of(md("a", sized("2", "4 GB")))


@pytest.mark.parametrize(
    ("key", "value"), [("labels", "novalue"), ("taints", "key=value"), ("taints", "k:Sometimes")]
)
def test_malformed_label_and_taint_annotations(key: str, value: str) -> None:
    with pytest.raises(
        ManifestError, match=rf"metadata.annotations\[capacity.cluster-autoscaler.kubernetes.io/{key}\]"
    ):
        catalog_of(md("a", sized("2", "4Gi", **{key: value})))


def test_bad_template_status_names_template() -> None:
    with pytest.raises(
        ManifestError, match=r"AWSMachineTemplate capi/a: status.capacity\[cpu\]: invalid quantity"
    ):
        catalog_of(
            md("a", infra_kind="AWSMachineTemplate"),
            template("AWSMachineTemplate", "a", {}, {"capacity": {"cpu": "four", "memory": "1Gi"}}),
        )


NODE_CLASS = {
    "apiVersion": "karpenter.cluster.x-k8s.io/v1alpha1",
    "kind": "ClusterAPINodeClass",
    "metadata": {"name": "default"},
}


def instance_types_under(
    node_class_spec: dict[str, Any], *objects: dict[str, Any]
) -> tuple[InstanceType, ...]:
    manifests = load_text(yaml.safe_dump_all([*objects, {**NODE_CLASS, "spec": node_class_spec}]))
    settings = node_class_settings(manifests.node_classes[0], manifests.config_maps)
    return build_catalog(manifests).instance_types(settings)


def test_price_annotation_then_table_then_relative() -> None:
    label = "node.kubernetes.io/instance-type="
    a = md("a", {**sized("2", "4Gi", labels=label + "a"), "kapstan.io/price-per-hour": "0.5"})
    b = md("b", sized("4", "8Gi", labels=label + "b"))
    c = md("c", sized("8", "16Gi", labels=label + "c"))
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "prices", "namespace": "kapstan"},
        "data": {"a": "9", "b": "0.25", "c": "0.75"},
    }
    spec = {"priceTable": {"c": "0.7"}, "priceTableRef": {"name": "prices", "namespace": "kapstan"}}
    prices = [it.offerings[0].price for it in instance_types_under(spec, a, b, c, config_map)]
    assert prices == [0.5, 0.25, 0.7]
    # Without a table: the relative cost, vCPU + GiB / 4.
    assert [it.offerings[0].price for it in instance_types_under({}, a, b, c)] == [0.5, 4 + 2, 8 + 4]


def test_relative_price_prefers_the_smallest_sufficient_flavor() -> None:
    assert relative_price({"cpu": 2000, "memory": 4 * GI}) < relative_price({"cpu": 4000, "memory": 8 * GI})


def test_missing_price_configmap() -> None:
    with pytest.raises(
        ManifestError, match=r'ClusterAPINodeClass default: spec.priceTableRef: ConfigMap "kapstan/gone"'
    ):
        instance_types_under({"priceTableRef": {"name": "gone", "namespace": "kapstan"}})


def test_bad_price_in_configmap_names_configmap_key() -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "p"},
        "data": {"c3-4": "free"},
    }
    with pytest.raises(ManifestError, match=r"ConfigMap default/p: data\[c3-4\]: invalid price"):
        instance_types_under({"priceTableRef": {"name": "p"}}, config_map)


def test_reservations_give_allocatable() -> None:
    spec = {
        "kubelet": {
            "kubeReserved": {"cpu": "100m", "memory": "256Mi"},
            "systemReserved": {"cpu": "100m"},
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
        }
    }
    (instance_type,) = instance_types_under(spec, md("a", sized("2", "4Gi", **{"ephemeral-disk": "50Gi"})))
    assert instance_type.allocatable == {
        "cpu": 1800,
        "memory": 4 * GI - 356 * 2**20 * 1000,
        "ephemeral-storage": 45 * GI,
        "pods": 110_000,
    }
    assert instance_type.capacity["cpu"] == 2000
