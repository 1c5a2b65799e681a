"""The Deployment runs `kapstan run` as the generated RBAC expects it to, and the committed YAML is what the
generator produces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kapstan.cli import main
from kapstan.cli_run import run_command
from kapstan.install import rbac
from kapstan.install.deployment import MANAGEMENT_KUBECONFIG, MANAGEMENT_SECRET, deployment

COMMITTED = Path(__file__).parents[2] / "install" / "deployment.yaml"


def _by_kind(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["kind"]: m for m in manifests}


def _pod(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = _by_kind(manifests)["Deployment"]["spec"]["template"]["spec"]
    return spec


def test_committed_deployment_matches_the_generator() -> None:
    result = CliRunner().invoke(main, ["render", "deployment"])
    assert result.exit_code == 0, result.output
    assert result.output == COMMITTED.read_text(), (
        f"{COMMITTED} is stale: regenerate it with `kapstan render deployment > install/deployment.yaml`"
    )


def test_the_container_runs_kapstan_run_with_flags_it_accepts() -> None:
    (container,) = _pod(deployment("team-a", "prod", namespace="ops"))["containers"]
    assert container["command"] == ["kapstan"] and container["args"][0] == "run"
    # The arguments parse: every flag exists on `kapstan run` (a renamed flag would crash-loop the pod).
    context = run_command.make_context("run", list(container["args"][1:]))
    assert context.params["cluster"] == "team-a/prod"
    assert context.params["management_kubeconfig"] == MANAGEMENT_KUBECONFIG
    assert context.params["workload_kubeconfig"] is None  # in-cluster
    assert context.params["leader_elect"] is True
    # Leader election where the Role from rbac.lease_rules grants the Lease.
    assert context.params["leader_election_namespace"] == "ops"
    assert context.params["leader_election_id"] == rbac.DEFAULT_LEASE
    assert context.params["metrics_address"].endswith(":8080")


def test_the_pod_runs_as_the_workload_service_account_and_mounts_the_management_credential() -> None:
    manifests = deployment(namespace="ops")
    pod = _pod(manifests)
    (account,) = [m for m in rbac.workload_rbac("ops") if m["kind"] == "ServiceAccount"]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert {m["metadata"]["namespace"] for m in manifests} == {"ops"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    (container,) = pod["containers"]
    mounts = {v["name"]: v for v in container["volumeMounts"]}
    secret = volumes[mounts["management-kubeconfig"]["name"]]["secret"]
    assert secret["secretName"] == MANAGEMENT_SECRET
    assert f"{mounts['management-kubeconfig']['mountPath']}/kubeconfig" == MANAGEMENT_KUBECONFIG


def test_the_pod_is_locked_down_and_probed() -> None:
    pod = _pod(deployment())
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["ports"] == [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}


def test_two_replicas_a_budget_and_a_metrics_service_select_the_same_pods() -> None:
    objects = _by_kind(deployment())
    spec = objects["Deployment"]["spec"]
    assert spec["replicas"] == 2
    labels = spec["template"]["metadata"]["labels"]
    for selector in (
        spec["selector"]["matchLabels"],
        objects["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
    ):
        assert selector.items() <= labels.items()
    assert objects["Service"]["spec"]["selector"].items() <= labels.items()
    assert objects["Service"]["metadata"]["annotations"]["prometheus.io/port"] == "8080"


def test_render_deployment_takes_the_cluster_image_and_namespace() -> None:
    args = ["render", "deployment", "--cluster", "team-a/prod", "--namespace", "ops"]
    args += ["--image", "registry.example/kapstan:dev", "--replicas", "3"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "--cluster=team-a/prod" in result.output
    assert "image: registry.example/kapstan:dev" in result.output
    assert "replicas: 3" in result.output
    assert "namespace: ops" in result.output and "kapstan-system" not in result.output
