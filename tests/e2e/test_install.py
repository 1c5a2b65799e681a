"""The Helm-free install end to end, on a sandbox with separate management and workload API servers.

The addon runs as a process with exactly the RBAC ``kapstan render addon`` gives it (as its ServiceAccount,
not as admin); the ClusterClass is ``clusterclass/sandbox-example.yaml``'s. One Cluster turns the variable
on for ``c3-4`` and ``c3-8`` (not ``c3-16``), another never sets it (that setup and the reads the tests
make are install_setup.py's). The tests run in file order on that shared setup: the install appears, the credential is what it should be, an autoscaler started from what
was delivered provisions a node, and turning the variable off takes it all away.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from install_setup import (
    CLUSTERROLES,
    DEPLOYMENTS,
    ENABLED,
    Setup,
    absent,
    bootstrap_taints,
    cluster_mds,
    credential,
    delivered_kubeconfig,
    get_or_none,
    installed,
    pending_workload,
    server_of,
    status_of,
)

from kapstan.addon.controller import CLUSTERRESOURCESETS, CONFIGMAPS, ROLES, SECRETS, SERVICEACCOUNTS
from kapstan.api.wellknown import AUTOSCALER_LABEL, UNREGISTERED_TAINT_KEY, unregistered_taint
from kapstan.capi import contract as c
from kapstan.install import bundle, rbac
from kapstan.install.clusterclass import VARIABLE
from kapstan.kube import kinds
from kapstan.kube.client import Client, Object
from kapstan.local import Sandbox, procs
from kapstan.local.apply import apply

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def setup(two_cluster_sandbox: Sandbox) -> Iterator[Setup]:
    yield from installed(two_cluster_sandbox)


def test_setting_the_variable_installs_the_autoscaler_and_its_credential_through_the_crs(
    setup: Setup,
) -> None:
    s = setup

    def cluster_labelled() -> bool:
        cluster = s(s.management.get(c.CLUSTERS, s.enabled, s.namespace))
        return bool(cluster["metadata"].get("labels", {}).get(AUTOSCALER_LABEL) == s.enabled)

    s.wait_for("the addon to label the Cluster", cluster_labelled)
    crs = s(s.management.get(CLUSTERRESOURCESETS, bundle.bundle_name(s.enabled), s.namespace))
    assert crs["spec"]["clusterSelector"] == {"matchLabels": {AUTOSCALER_LABEL: s.enabled}}
    assert crs["spec"]["strategy"] == "Reconcile"

    def deployment() -> Object | None:
        return s(get_or_none(s.workload, DEPLOYMENTS, rbac.NAME, rbac.DEFAULT_NAMESPACE))

    delivered = s.wait_for("the Deployment in the workload cluster", deployment, timeout=180)
    (container,) = delivered["spec"]["template"]["spec"]["containers"]
    assert f"--cluster={s.namespace}/{s.enabled}" in container["args"]
    kubeconfig = s.wait_for("the credential in the workload cluster", lambda: delivered_kubeconfig(s))
    config = yaml.safe_load(kubeconfig)
    assert config["clusters"][0]["cluster"]["server"] == server_of(s.sandbox.management_kubeconfig)
    # The workload cluster got the autoscaler's objects, and the management cluster did not.
    # The CRS retries the NodePool until its CRD is Established, so it can come a little later.
    pool = s.wait_for(
        "the default NodePool",
        lambda: s(get_or_none(s.workload, kinds.NODEPOOLS, bundle.DEFAULT_NODEPOOL)),
        timeout=180,
    )
    assert pool["spec"]["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-4", "c3-8"]}
    ]
    assert s(s.workload.get(CLUSTERROLES, rbac.NAME))["rules"] == rbac.workload_rules()
    assert s(get_or_none(s.management, DEPLOYMENTS, rbac.NAME, rbac.DEFAULT_NAMESPACE)) is None
    # The Cluster that never set the variable got nothing.
    other = s(s.management.get(c.CLUSTERS, s.disabled, s.namespace))
    assert AUTOSCALER_LABEL not in other["metadata"].get("labels", {})
    assert (
        s(get_or_none(s.management, CLUSTERRESOURCESETS, bundle.bundle_name(s.disabled), s.namespace)) is None
    )


def test_the_topology_patch_taints_the_autoscaled_classes_only(setup: Setup) -> None:
    s = setup
    taint = unregistered_taint()
    # c3-16 can be autoscaled (the ClusterClass has its patch) but this Cluster's workerClasses leave it out.
    expected = {"system": [], "c3-4": [taint], "c3-8": [taint], "c3-16": []}

    def patched() -> dict[str, list[Object]] | None:
        taints = bootstrap_taints(s, s.enabled)
        return taints if taints == expected else None

    s.wait_for(f"bootstrap taints {expected}", patched)
    untouched = {"system": [], "c3-4": [], "c3-8": [], "c3-16": []}
    s.wait_for(
        "no taint on the Cluster without the variable", lambda: bootstrap_taints(s, s.disabled) == untouched
    )


def test_the_delivered_credential_can_do_its_job_in_its_namespace_and_nothing_else(
    setup: Setup, tmp_path: Path
) -> None:
    s = setup
    holder = s(Client.connect(str(credential(s, tmp_path))))
    md = next(
        m
        for m in cluster_mds(s, s.enabled)
        if m["metadata"]["labels"][c.TOPOLOGY_DEPLOYMENT_LABEL] == "c3-16"
    )
    name = md["metadata"]["name"]
    # Scale: read the scale subresource and write it back unchanged (authorized, and no Machine appears).
    scale = s(
        holder.request("GET", c.MACHINEDEPLOYMENTS, namespace=s.namespace, name=name, subresource="scale")
    )
    replicas = {"spec": {"replicas": scale["spec"].get("replicas", 0)}}  # 0 is left out
    assert (
        status_of(
            s, holder.patch(c.MACHINEDEPLOYMENTS, name, replicas, namespace=s.namespace, subresource="scale")
        )
        == 200
    )

    def machine() -> Object | None:
        found = s(
            holder.request(
                "GET",
                c.MACHINES,
                namespace=s.namespace,
                params={"labelSelector": f"{c.CLUSTER_NAME_LABEL}={s.enabled}"},
            )
        )["items"]
        return found[0] if found else None

    # The system pool's Machine: annotate it as kapstan annotates the Machines it claims or deletes.
    target = s.wait_for("a Machine of the Cluster", machine)
    note = {"metadata": {"annotations": {"kapstan.io/e2e": "annotated"}}}
    assert (
        status_of(s, holder.patch(c.MACHINES, target["metadata"]["name"], note, namespace=s.namespace)) == 200
    )
    # Denied: Secrets (CAPI keeps every Cluster's kubeconfig there), another namespace's MDs, deleting
    # the Cluster, and reading the Cluster next door by name.
    assert status_of(s, holder.get(SECRETS, f"{s.enabled}-kubeconfig", s.namespace)) == 403
    assert status_of(s, holder.request("GET", SECRETS, namespace=s.namespace)) == 403
    assert status_of(s, holder.request("GET", c.MACHINEDEPLOYMENTS, namespace="default")) == 403
    assert (
        status_of(
            s, holder.patch(c.MACHINEDEPLOYMENTS, name, replicas, namespace="default", subresource="scale")
        )
        == 403
    )
    assert status_of(s, holder.delete(c.CLUSTERS, s.enabled, s.namespace)) == 403
    assert status_of(s, holder.delete(c.MACHINES, target["metadata"]["name"], s.namespace)) == 403
    assert status_of(s, holder.get(c.CLUSTERS, s.disabled, s.namespace)) == 403


def test_an_autoscaler_started_as_rendered_with_the_delivered_credential_provisions_a_node(
    setup: Setup, tmp_path: Path
) -> None:
    s = setup
    management = credential(s, tmp_path)
    delivered = s(s.workload.get(DEPLOYMENTS, rbac.NAME, rbac.DEFAULT_NAMESPACE))
    (container,) = delivered["spec"]["template"]["spec"]["containers"]
    # The Deployment's own command and arguments; only what a pod gets from its surroundings is replaced:
    # the mounted Secret's path, in-cluster credentials (the same ServiceAccount's token), a free port.
    workload = s.sandbox.service_account_kubeconfig(rbac.DEFAULT_NAMESPACE, rbac.NAME)
    args = [
        f"--management-kubeconfig={management}"
        if a.startswith("--management-kubeconfig=")
        else f"--metrics-address=127.0.0.1:{procs.free_port()}"
        if a.startswith("--metrics-address=")
        else a
        for a in container["args"]
    ]
    argv = [sys.executable, "-m", *container["command"], *args, f"--workload-kubeconfig={workload}"]
    name = f"kapstan-{s.namespace}"
    pid = procs.start(s.sandbox.directory, name, argv)
    app_ns = f"{s.namespace}-app"
    try:
        s(apply(s.workload, pending_workload(app_ns)))

        def running() -> bool:
            pods = s(s.workload.request("GET", kinds.PODS, namespace=app_ns))["items"]
            return any(p.get("status", {}).get("phase") == "Running" for p in pods)

        try:
            s.wait_for("the pending pod to run on a node kapstan provisioned", running, timeout=180)
        except AssertionError as error:
            raise AssertionError(
                f"{error}\n--- kapstan ---\n{procs.log_tail(s.sandbox.directory, name, 60)}"
            ) from None
        (pod,) = s(s.workload.request("GET", kinds.PODS, namespace=app_ns))["items"]
        node = s(s.workload.get(kinds.NODES, pod["spec"]["nodeName"]))
        # The cheapest flavor that fits 1.5 vCPU, from a class the variable handed to kapstan.
        assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "c3-4"
        assert not any(t["key"] == UNREGISTERED_TAINT_KEY for t in node["spec"].get("taints", []))
    finally:
        # Let kapstan take its node away again before it stops, so nothing is left for the next test.
        s(s.workload.delete(kinds.NAMESPACES, app_ns))
        for claim in s(s.workload.request("GET", kinds.NODECLAIMS))["items"]:
            s(absent(s.workload.delete(kinds.NODECLAIMS, claim["metadata"]["name"])))
        deadline = time.monotonic() + 90
        while s(s.workload.request("GET", kinds.NODECLAIMS))["items"] and time.monotonic() < deadline:
            time.sleep(0.5)
        procs.stop(s.sandbox.directory, name, pid)


def test_turning_the_variable_off_removes_the_label_crs_credential_and_workload_install(
    setup: Setup, tmp_path: Path
) -> None:
    s = setup
    holder = s(Client.connect(str(credential(s, tmp_path))))
    cluster = s(s.management.get(c.CLUSTERS, s.enabled, s.namespace))
    variables = [
        {"name": VARIABLE, "value": {**ENABLED, "enabled": False}} if v["name"] == VARIABLE else v
        for v in cluster["spec"]["topology"]["variables"]
    ]
    s(
        s.management.patch(
            c.CLUSTERS, s.enabled, {"spec": {"topology": {"variables": variables}}}, namespace=s.namespace
        )
    )

    def unlabelled() -> bool:
        got = s(s.management.get(c.CLUSTERS, s.enabled, s.namespace))
        return AUTOSCALER_LABEL not in got["metadata"].get("labels", {})

    s.wait_for("the label to go", unlabelled)
    prefix = bundle.bundle_name(s.enabled)
    sa = rbac.management_name(s.enabled)
    for resource, name in (
        (CLUSTERRESOURCESETS, prefix),
        (SECRETS, f"{prefix}-credentials"),
        (CONFIGMAPS, f"{prefix}-install"),
        (SECRETS, f"{sa}-token"),
        (SERVICEACCOUNTS, sa),
        (ROLES, sa),
    ):
        assert s(get_or_none(s.management, resource, name, s.namespace)) is None, (
            f"{resource.kind} {name} is left"
        )

    # The token is revoked with its Secret. The API server notices through its informers, so for a moment
    # the token may still authenticate, but with the RoleBinding gone it is already powerless (403).
    def revoked() -> bool:
        status = status_of(s, holder.request("GET", c.MACHINEDEPLOYMENTS, namespace=s.namespace))
        assert status in (401, 403), status
        return status == 401

    s.wait_for("the delivered token to be refused", revoked, timeout=60)
    assert s(get_or_none(s.workload, CLUSTERROLES, rbac.NAME)) is None
    assert s(get_or_none(s.workload, kinds.NODEPOOLS, bundle.DEFAULT_NODEPOOL)) is None
    s.wait_for(
        "kapstan's namespace to be deleted from the workload cluster",
        lambda: s(get_or_none(s.workload, kinds.NAMESPACES, rbac.DEFAULT_NAMESPACE)) is None,
        timeout=120,
    )
    # The topology controller drops the taint patch too (a rollout of the autoscaled pools' templates).
    s.wait_for(
        "the taint to leave the bootstrap templates",
        lambda: all(not t for t in bootstrap_taints(s, s.enabled).values()),
    )
