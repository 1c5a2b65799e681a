"""The ClusterClass variable and patches, the ClusterResourceSet bundle and the addon's install: their shape,
the rules they must follow, and the committed files being exactly what ``kapstan render`` prints."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kapstan.api.wellknown import AUTOSCALER_LABEL
from kapstan.cli import main
from kapstan.install import bundle, clusterclass, examples, rbac
from kapstan.install.clusterclass import PATCH_PREFIX, VARIABLE, WorkerFlavor, merge, settings
from kapstan.install.deployment import MANAGEMENT_SECRET

ROOT = Path(__file__).parents[2]
COMMITTED = {
    "clusterclass/openstack-example.yaml": ["render", "clusterclass", "--example", "openstack"],
    "clusterclass/sandbox-example.yaml": ["render", "clusterclass", "--example", "sandbox"],
    "install/addon.yaml": ["render", "addon", "--management-server", "https://management.example.com:6443"],
    "install/workload.yaml": ["render", "install"],
}


@pytest.mark.parametrize("path", sorted(COMMITTED))
def test_committed_file_matches_the_generator(path: str) -> None:
    result = CliRunner().invoke(main, COMMITTED[path])
    assert result.exit_code == 0, result.output
    assert result.output == (ROOT / path).read_text(), (
        f"{path} is stale: regenerate it with `kapstan {' '.join(COMMITTED[path])} > {path}`"
    )


def _class(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == "ClusterClass"]
    return found


def test_each_autoscaled_class_gets_its_own_patch_gated_on_enabled_and_workerclasses() -> None:
    spec = _class(examples.sandbox("ns"))["spec"]
    ours = [p for p in spec["patches"] if p["name"].startswith(PATCH_PREFIX)]
    assert [p["name"].removeprefix(PATCH_PREFIX) for p in ours] == ["c3-4", "c3-8", "c3-16"]
    for patch in ours:
        cls = patch["name"].removeprefix(PATCH_PREFIX)
        assert (
            patch["enabledIf"] == f'{{{{ and .{VARIABLE}.enabled (has "{cls}" .{VARIABLE}.workerClasses) }}}}'
        )
        (definition,) = patch["definitions"]
        assert definition["selector"]["kind"] == "KubeadmConfigTemplate"
        assert definition["selector"]["matchResources"] == {"machineDeploymentClass": {"names": [cls]}}
        assert definition["jsonPatches"] == [
            {
                "op": "add",
                "path": "/spec/template/spec/joinConfiguration/nodeRegistration/taints/-",
                "value": {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
            }
        ]
    # The class kapstan leaves alone has no patch and no membership marker.
    system = next(w for w in spec["workers"]["machineDeployments"] if w["class"] == examples.SYSTEM_CLASS)
    assert "metadata" not in system


def test_the_variable_defaults_to_off_with_every_autoscaled_class() -> None:
    (variable,) = [v for v in _class(examples.sandbox("ns"))["spec"]["variables"] if v["name"] == VARIABLE]
    schema = variable["schema"]["openAPIV3Schema"]
    assert variable["required"] is False and schema["default"] == {}
    assert schema["properties"]["enabled"]["default"] is False
    assert schema["properties"]["workerClasses"]["default"] == ["c3-4", "c3-8", "c3-16"]
    assert schema["properties"]["workerClasses"]["items"]["enum"] == ["c3-4", "c3-8", "c3-16"]


def test_merge_keeps_what_is_there_and_is_idempotent() -> None:
    original = {
        "kind": "ClusterClass",
        "metadata": {"name": "mine"},
        "spec": {
            "variables": [
                {"name": "region", "required": True, "schema": {"openAPIV3Schema": {"type": "string"}}}
            ],
            "patches": [{"name": "region", "definitions": []}],
            "workers": {
                "machineDeployments": [
                    {"class": "big", "metadata": {"annotations": {"team": "a"}}},
                    {"class": "base"},
                ]
            },
        },
    }
    flavor = WorkerFlavor("big", cpu="16", memory="64Gi", instance_type="b2-60", price_per_hour="0.5")
    once = merge(original, [flavor])
    assert merge(once, [flavor]) == once
    assert [v["name"] for v in once["spec"]["variables"]] == ["region", VARIABLE]
    assert [p["name"] for p in once["spec"]["patches"]] == ["region", f"{PATCH_PREFIX}big"]
    big, base = once["spec"]["workers"]["machineDeployments"]
    assert big["metadata"]["annotations"]["team"] == "a"
    assert big["metadata"]["annotations"]["kapstan.io/managed"] == "true"
    assert big["metadata"]["annotations"]["kapstan.io/price-per-hour"] == "0.5"
    assert "metadata" not in base
    assert original["spec"]["workers"]["machineDeployments"][0]["metadata"]["annotations"] == {"team": "a"}
    assert clusterclass.instance_types(once, ["big", "base"]) == ["b2-60", "base"]
    with pytest.raises(ValueError, match="no worker class small"):
        merge(original, [WorkerFlavor("small", cpu="1", memory="1Gi")])


def test_settings_read_the_cluster_variable() -> None:
    on = examples.cluster("c", "ns", "k", "v1.33.1", {"enabled": True, "workerClasses": ["c3-8"]})
    assert settings(on).enabled and settings(on).worker_classes == ("c3-8",)
    assert settings(on).cpu_limit == "64"
    assert not settings(examples.cluster("c", "ns", "k", "v1.33.1")).enabled
    assert not settings({"metadata": {"name": "standalone"}, "spec": {}}).enabled
    pool = {"enabled": True, "nodePool": {"cpuLimit": 8, "consolidationPolicy": "WhenEmpty"}}
    got = settings(examples.cluster("c", "ns", "k", "v1.33.1", pool))
    assert (got.cpu_limit, got.consolidation_policy) == ("8", "WhenEmpty")


def test_missing_taints_field_finds_templates_the_patch_cannot_append_to() -> None:
    templates = [d for d in examples.sandbox("ns") if d["kind"] == "KubeadmConfigTemplate"]
    assert clusterclass.missing_taints_field(templates) == []
    bare = {"kind": "KubeadmConfigTemplate", "metadata": {"name": "bare"}, "spec": {"template": {"spec": {}}}}
    assert clusterclass.missing_taints_field([*templates, bare]) == ["bare"]


def _groups() -> list[list[dict[str, Any]]]:
    wanted = clusterclass.Settings(enabled=True, cpu_limit="32", consolidate_after="5m")
    return bundle.workload_install("team-a", "prod", wanted, ["c3-4", "c3-8"], image="example/kapstan:1")


def test_the_bundle_delivers_every_group_in_order_and_the_credential_as_a_resource_set_secret() -> None:
    objects = bundle.bundle("team-a", "prod", _groups(), "apiVersion: v1\nkind: Config\n")
    crs = objects[-1]
    assert crs["kind"] == "ClusterResourceSet" and crs["metadata"]["namespace"] == "team-a"
    assert crs["spec"]["strategy"] == "Reconcile"
    assert crs["spec"]["clusterSelector"] == {"matchLabels": {AUTOSCALER_LABEL: "prod"}}
    assert crs["spec"]["resources"] == [
        {"kind": "ConfigMap", "name": "kapstan-prod-crds"},
        {"kind": "ConfigMap", "name": "kapstan-prod-install"},
        {"kind": "Secret", "name": "kapstan-prod-credentials"},
        {"kind": "ConfigMap", "name": "kapstan-prod-nodepool"},
    ]
    by_name = {o["metadata"]["name"]: o for o in objects[:-1]}
    assert {r["name"] for r in crs["spec"]["resources"]} == set(by_name)
    assert all(o["metadata"]["namespace"] == "team-a" for o in objects)
    # Nothing sensitive in a ConfigMap: the kubeconfig only in the Secret.
    configmaps = [o for o in objects if o["kind"] == "ConfigMap"]
    assert not any("kind: Config\n" in text for o in configmaps for text in o["data"].values())
    secret = by_name["kapstan-prod-credentials"]
    assert secret["type"] == "addons.cluster.x-k8s.io/resource-set"
    (delivered,) = yaml.safe_load_all(base64.b64decode(secret["data"]["credentials.yaml"]))
    assert delivered["metadata"] == {
        "name": MANAGEMENT_SECRET,
        "namespace": rbac.DEFAULT_NAMESPACE,
        "labels": {"app.kubernetes.io/name": "kapstan", "app.kubernetes.io/part-of": "kapstan"},
    }
    assert base64.b64decode(delivered["data"]["kubeconfig"]).decode() == "apiVersion: v1\nkind: Config\n"
    install = list(yaml.safe_load_all(by_name["kapstan-prod-install"]["data"]["install.yaml"]))
    (deployment,) = [d for d in install if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--cluster=team-a/prod" in container["args"] and container["image"] == "example/kapstan:1"
    pool, *_ = (d for d in yaml.safe_load_all(by_name["kapstan-prod-nodepool"]["data"]["nodepool.yaml"]))
    assert pool["kind"] == "ClusterAPINodeClass"


def test_without_a_credential_the_bundle_has_no_secret() -> None:
    objects = bundle.bundle("team-a", "prod", _groups(), None)
    assert [o["kind"] for o in objects] == ["ConfigMap", "ConfigMap", "ConfigMap", "ClusterResourceSet"]


def test_the_default_nodepool_follows_the_variable() -> None:
    _, _, (node_class, pool) = _groups()
    assert pool["spec"]["limits"] == {"cpu": "32", "memory": "256Gi"}
    assert pool["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "5m",
    }
    assert pool["spec"]["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-4", "c3-8"]}
    ]
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == node_class["metadata"]["name"]


def test_the_management_kubeconfig_carries_server_ca_and_token() -> None:
    config = yaml.safe_load(bundle.management_kubeconfig("https://m:6443", "Q0E=", "tok", "prod"))
    (cluster,) = config["clusters"]
    assert cluster["cluster"] == {"server": "https://m:6443", "certificate-authority-data": "Q0E="}
    assert config["users"][0]["user"] == {"token": "tok"}
    assert config["current-context"] == config["contexts"][0]["name"]


def _covers(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in r["apiGroups"]
        and (resource in r["resources"] or "*" in r["resources"])
        and verb in r["verbs"]
        and "resourceNames" not in r
        for r in rules
    )


def test_the_addon_holds_every_permission_it_grants_and_no_escalate_or_bind() -> None:
    # RBAC lets the addon create a Role only if it holds each of the Role's permissions itself.
    groups = ("infrastructure.kapstan.dev", "infrastructure.cluster.x-k8s.io")
    addon = rbac.addon_rules(groups)
    for group in groups:
        for r in rbac.management_rules("prod", group):
            for api_group in r["apiGroups"]:
                for resource in r["resources"]:
                    for verb in r["verbs"]:
                        assert _covers(addon, api_group, resource, verb), (api_group, resource, verb)
    assert not any({"escalate", "bind", "impersonate", "*"} & set(r["verbs"]) for r in addon)


def test_render_clusterclass_merges_into_a_file_and_warns_about_untaintable_templates(tmp_path: Path) -> None:
    docs = [d for d in examples.sandbox("ns") if d["kind"] != "ClusterClass"]
    plain = _class(examples.sandbox("ns"))
    plain["spec"].pop("variables")
    plain["spec"].pop("patches")
    for worker in plain["spec"]["workers"]["machineDeployments"]:
        worker.pop("metadata", None)
    c3_8 = next(d for d in docs if d["kind"] == "KubeadmConfigTemplate" and d["metadata"]["name"] == "c3-8")
    del c3_8["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["taints"]
    path = tmp_path / "class.yaml"
    path.write_text(yaml.safe_dump_all([*docs, plain]))
    result = CliRunner().invoke(
        main, ["render", "clusterclass", "-f", str(path), "--worker-class", "c3-8=4,8Gi,0.1"]
    )
    assert result.exit_code == 0, result.output
    assert "KubeadmConfigTemplate c3-8 has no joinConfiguration.nodeRegistration.taints" in result.stderr
    merged = _class(list(yaml.safe_load_all(result.stdout)))
    assert clusterclass.autoscaled_classes(merged) == ["c3-8"]
    bad = CliRunner().invoke(main, ["render", "clusterclass", "-f", str(path), "--worker-class", "c3-8"])
    assert bad.exit_code == 2 and "NAME=CPU,MEMORY[,PRICE]" in bad.output


def test_render_install_builds_the_nodepool_from_a_variable_value_as_the_addon_reads_it() -> None:
    value = "{nodePool: {cpuLimit: 32, consolidationPolicy: WhenEmpty}, workerClasses: [c3-8]}"
    result = CliRunner().invoke(main, ["render", "install", "--variable", value])
    assert result.exit_code == 0, result.output
    (pool,) = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "NodePool"]
    assert pool["spec"]["limits"] == {"cpu": "32", "memory": "256Gi"}
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert pool["spec"]["template"]["spec"]["requirements"][0]["values"] == ["c3-8"]
    bad = CliRunner().invoke(main, ["render", "install", "--variable", "[1]"])
    assert bad.exit_code == 2 and "must be a mapping" in bad.output


def test_render_addon_passes_a_management_ca_the_addon_command_accepts(tmp_path: Path) -> None:
    from kapstan.cli_addon import addon_command

    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    docs = list(
        yaml.safe_load_all(
            CliRunner()
            .invoke(
                main, ["render", "addon", "--management-server", "https://m", "--management-ca-file", str(ca)]
            )
            .stdout
        )
    )
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    expected = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()
    assert f"--management-ca-data={expected}" in container["args"]
    context = addon_command.make_context("addon", list(container["args"][1:]))
    assert context.params["management_ca_data"] == expected
    assert context.params["management_server"] == "https://m"
