"""The RBAC rules against the operator's calls, without a server: every call kapstan makes is granted, the
management credential stays a namespaced Role, and the committed YAML is what the generator produces."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kapstan.capi import contract as c
from kapstan.cli import main
from kapstan.install import rbac
from kapstan.kube import kinds
from kapstan.kube.client import CONFIGMAPS, LEASES, Resource
from kapstan.kube.events import EVENTS

INSTALL = Path(__file__).parents[2] / "install"
# The v1alpha5 kinds controllers/unserved.py lists to name them (discovery finds their Resources).
LEGACY_PLURALS = (("provisioners", "Provisioner"), ("machines", "Machine"))

Rules = list[dict[str, Any]]

LEGACY = [Resource("karpenter.sh", "v1alpha5", plural, kind, False) for plural, kind in LEGACY_PLURALS]
# Every request `kapstan run` makes, by side: (resource, subresource, verb). Reading the controllers,
# capi/ and kube/ (and the template-taints controller's: create bootstrap templates, patch MDs).
WORKLOAD_CALLS: list[tuple[Resource, str, str]] = [
    *((r, "", v) for r in (kinds.PODS, kinds.NODES, kinds.NAMESPACES) for v in ("list", "watch")),
    *((r, "", v) for r in (kinds.DAEMONSETS, kinds.PDBS) for v in ("list", "watch")),
    *((r, "", v) for r in (kinds.NODEPOOLS, kinds.NODECLAIMS, kinds.NODECLASSES) for v in ("list", "watch")),
    (kinds.PODS, "eviction", "create"),
    (kinds.NODES, "", "patch"),
    (kinds.NODECLAIMS, "", "create"),
    (kinds.NODECLAIMS, "", "patch"),
    (kinds.NODECLAIMS, "", "delete"),
    (kinds.NODECLAIMS, "status", "patch"),
    (kinds.NODEPOOLS, "status", "patch"),
    (kinds.NODECLASSES, "status", "patch"),
    (EVENTS, "", "create"),
    (EVENTS, "", "patch"),
    (CONFIGMAPS, "", "get"),
    *((r, "", "list") for r in LEGACY),
]
LEASE_CALLS = [(LEASES, "", "get"), (LEASES, "", "create"), (LEASES, "", "update")]
MANAGEMENT_CALLS: list[tuple[Resource, str, str]] = [
    *((r, "", v) for r in (c.MACHINEDEPLOYMENTS, c.MACHINES) for v in ("get", "list", "watch", "patch")),
    (c.MACHINEDEPLOYMENTS, "scale", "patch"),
    *((c.CLUSTERS, "", v) for v in ("get", "list", "watch", "patch")),
    *((c.CLUSTERCLASSES, "", v) for v in ("list", "watch")),
    *((c.KUBEADMCONFIGTEMPLATES, "", v) for v in ("get", "list", "watch", "create")),
    (EVENTS, "", "create"),
    (EVENTS, "", "patch"),
]


def allows(rules: Rules, group: str, resource: str, verb: str, name: str = "") -> bool:
    """The RBAC authorizer's decision for one request, from the rules of the roles bound to the subject."""
    for rule in rules:
        if not _match(rule["apiGroups"], group) or not _match(rule["resources"], resource):
            continue
        if not _match(rule["verbs"], verb):
            continue
        names = rule.get("resourceNames")
        if names and name not in names:
            continue
        return True
    return False


def _match(allowed: Iterable[str], value: str) -> bool:
    return "*" in allowed or value in allowed


def _resource(resource: Resource, subresource: str) -> str:
    return f"{resource.plural}/{subresource}" if subresource else resource.plural


def _of(manifests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == kind]


@pytest.mark.parametrize(("resource", "subresource", "verb"), WORKLOAD_CALLS)
def test_the_cluster_role_grants_each_workload_call(resource: Resource, subresource: str, verb: str) -> None:
    assert allows(rbac.workload_rules(), resource.group, _resource(resource, subresource), verb)


@pytest.mark.parametrize(("resource", "subresource", "verb"), LEASE_CALLS)
def test_the_lease_role_grants_leader_election_on_its_lease_only(
    resource: Resource, subresource: str, verb: str
) -> None:
    rules = rbac.lease_rules("my-lease")
    assert allows(rules, resource.group, resource.plural, verb, "my-lease")
    if verb != "create":  # create is authorized before the object, hence its name, exists
        assert not allows(rules, resource.group, resource.plural, verb, "kube-scheduler")


@pytest.mark.parametrize(("resource", "subresource", "verb"), MANAGEMENT_CALLS)
def test_the_management_role_grants_each_call(resource: Resource, subresource: str, verb: str) -> None:
    rules = rbac.management_rules("c1")
    assert allows(rules, resource.group, _resource(resource, subresource), verb, "c1")


def test_every_kind_the_operator_knows_has_a_rule() -> None:
    """A new Resource constant in kube/ or capi/ fails here until the roles say what may be done with it."""
    known = {v for m in (kinds, c) for v in vars(m).values() if isinstance(v, Resource)}
    known |= {CONFIGMAPS, LEASES, EVENTS}
    rules = rbac.workload_rules() + rbac.lease_rules() + rbac.management_rules("c1")
    granted = {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}
    missing = sorted(f"{r.group}/{r.plural}" for r in known if (r.group, r.plural) not in granted)
    assert not missing, f"no RBAC rule for {missing}: add one to kapstan.install.rbac"


@pytest.mark.parametrize(
    ("group", "resource", "verb"),
    [
        ("", "nodes", "delete"),  # a Node goes with its Machine, never first
        ("", "nodes", "update"),
        ("", "pods", "delete"),  # pods leave through the Eviction API only
        ("", "secrets", "get"),
        ("", "configmaps", "list"),
        ("", "events", "list"),
        ("karpenter.sh", "nodepools", "patch"),  # the user's spec
        ("karpenter.sh", "nodepools", "delete"),
        ("karpenter.sh", "provisioners", "patch"),  # named, never touched
        ("karpenter.sh", "provisioners", "delete"),
        ("apps", "deployments", "get"),
        ("rbac.authorization.k8s.io", "clusterroles", "escalate"),
    ],
)
def test_the_cluster_role_refuses_what_kapstan_does_not_do(group: str, resource: str, verb: str) -> None:
    assert not allows(rbac.workload_rules(), group, resource, verb)


@pytest.mark.parametrize(
    ("group", "resource", "verb", "name"),
    [
        ("", "secrets", "get", ""),
        ("", "secrets", "list", ""),
        ("cluster.x-k8s.io", "machinedeployments", "delete", ""),
        ("cluster.x-k8s.io", "machinedeployments", "create", ""),
        ("cluster.x-k8s.io", "machines", "delete", ""),
        ("cluster.x-k8s.io", "clusters", "delete", "c1"),
        ("cluster.x-k8s.io", "clusters", "patch", "another-cluster"),
        ("cluster.x-k8s.io", "clusters", "get", "another-cluster"),
        ("cluster.x-k8s.io", "clusterclasses", "patch", ""),
        ("bootstrap.cluster.x-k8s.io", "kubeadmconfigtemplates", "delete", ""),
        ("bootstrap.cluster.x-k8s.io", "kubeadmconfigtemplates", "update", ""),
        ("infrastructure.cluster.x-k8s.io", "awsmachinetemplates", "list", ""),
        ("infrastructure.cluster.x-k8s.io", "awsmachinetemplates", "patch", ""),
        ("addons.cluster.x-k8s.io", "clusterresourcesets", "get", ""),
    ],
)
def test_the_management_role_refuses_what_kapstan_does_not_do(
    group: str, resource: str, verb: str, name: str
) -> None:
    assert not allows(rbac.management_rules("c1"), group, resource, verb, name)


def test_infrastructure_templates_are_readable_by_get_in_the_chosen_group() -> None:
    default = rbac.management_rules("c1")
    assert allows(default, "infrastructure.cluster.x-k8s.io", "openstackmachinetemplates", "get")
    assert not allows(default, "infrastructure.kapstan.dev", "testmachinetemplates", "get")
    narrow = rbac.management_rules("c1", "infrastructure.kapstan.dev", ["testmachinetemplates"])
    assert allows(narrow, "infrastructure.kapstan.dev", "testmachinetemplates", "get")
    assert not allows(narrow, "infrastructure.kapstan.dev", "testclusters", "get")


def test_the_management_credential_is_a_role_in_the_clusters_namespace() -> None:
    manifests = rbac.management_rbac("team-a", "prod")
    assert not _of(manifests, "ClusterRole") and not _of(manifests, "ClusterRoleBinding")
    assert {m["metadata"]["namespace"] for m in manifests} == {"team-a"}
    (binding,) = _of(manifests, "RoleBinding")
    assert binding["roleRef"] == {"apiGroup": rbac.RBAC, "kind": "Role", "name": "kapstan-prod"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kapstan-prod", "namespace": "team-a"}]
    (token,) = _of(manifests, "Secret")
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "kapstan-prod"}


def test_the_workload_bindings_point_at_the_service_account() -> None:
    manifests = rbac.workload_rbac("ops", name="kapstan-x")
    subject = {"kind": "ServiceAccount", "name": "kapstan-x", "namespace": "ops"}
    for binding in _of(manifests, "ClusterRoleBinding") + _of(manifests, "RoleBinding"):
        assert binding["subjects"] == [subject]
        assert binding["roleRef"]["name"] == "kapstan-x"
    (role,) = _of(manifests, "Role")
    assert role["metadata"]["namespace"] == "ops"


@pytest.mark.parametrize(
    ("args", "committed"),
    [
        (["render", "rbac", "--side", "workload"], "rbac-workload.yaml"),
        (["render", "rbac", "--side", "management"], "rbac-management.yaml"),
    ],
)
def test_committed_rbac_matches_the_generator(args: list[str], committed: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    path = INSTALL / committed
    assert result.output == path.read_text(), (
        f"{path} is stale: regenerate it with `kapstan {' '.join(args)} > install/{committed}`"
    )


def test_render_rbac_takes_the_cluster_and_the_provider() -> None:
    args = ["render", "rbac", "--side", "management", "--cluster", "team-a/prod"]
    args += ["--infrastructure-group", "infrastructure.kapstan.dev"]
    args += ["--infrastructure-resource", "testmachinetemplates"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "namespace: team-a" in result.output
    assert "- infrastructure.kapstan.dev\n  resources:\n  - testmachinetemplates\n" in result.output
    bad = CliRunner().invoke(main, ["render", "rbac", "--side", "management", "--cluster", "prod"])
    assert bad.exit_code == 2 and "NAMESPACE/NAME" in bad.output
