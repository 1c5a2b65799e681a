"""The shared setup of test_install.py, the Helm-free install end to end: the addon started as a process
with exactly the RBAC ``kapstan render addon`` gives it, the sandbox ClusterClass, one Cluster that turns
the variable on for ``c3-4`` and ``c3-8`` and one that never sets it; and the reads the tests make of
what the addon delivered."""

from __future__ import annotations

import asyncio
import base64
import sys
import urllib.request
import uuid
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from click.testing import CliRunner

import polling
from kapstan.addon.controller import SECRETS
from kapstan.capi import contract as c
from kapstan.cli import main
from kapstan.install import bundle, examples, rbac
from kapstan.install.deployment import MANAGEMENT_SECRET
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox, procs
from kapstan.local.apply import apply
from kapstan.local.build import KUBERNETES_VERSION

T = TypeVar("T")
INFRA_GROUP = "infrastructure.kapstan.dev"
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
CLUSTERROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
ENABLED = {"enabled": True, "workerClasses": ["c3-4", "c3-8"]}


@dataclass
class Setup:
    sandbox: Sandbox
    loop: asyncio.AbstractEventLoop
    management: Client
    workload: Client
    namespace: str
    enabled: str  # the Cluster that turns kapstan on
    disabled: str  # the Cluster that never does
    addon_pid: int
    addon_name: str

    def __call__(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def wait_for(self, what: str, check: Callable[[], T | None], timeout: float = 120.0) -> T:
        """``polling.wait_for``, with the addon's last log lines on a timeout."""
        try:
            return polling.wait_for(what, check, timeout)
        except AssertionError as timed_out:
            log = procs.log_tail(self.sandbox.directory, self.addon_name, 40)
            raise AssertionError(f"{timed_out}\n{log}") from None


def server_of(kubeconfig: Path) -> str:
    """The API server address ``kubeconfig`` names."""
    return str(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])


def render(*args: str) -> list[Object]:
    """The objects ``kapstan render ARGS`` prints."""
    result = CliRunner().invoke(main, ["render", *args])
    assert result.exit_code == 0, result.output
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def with_all_classes(cluster: Object) -> Object:
    """Topology entries for every class, so each gets its own bootstrap template to look at."""
    workers = cluster["spec"]["topology"]["workers"]["machineDeployments"]
    workers += [{"class": cls, "name": cls} for cls in ("c3-8", "c3-16")]
    return cluster


async def get_or_none(
    client: Client, resource: Resource, name: str, namespace: str | None = None
) -> Object | None:
    try:
        return await client.get(resource, name, namespace)
    except ApiError as error:
        if error.not_found:
            return None
        raise


def installed(sandbox: Sandbox) -> Iterator[Setup]:
    """The addon running as its rendered RBAC allows, the sandbox ClusterClass, and the two Clusters; the
    addon is stopped afterwards."""
    loop = asyncio.new_event_loop()
    management = loop.run_until_complete(Client.connect(str(sandbox.management_kubeconfig)))
    workload = loop.run_until_complete(Client.connect(str(sandbox.workload_kubeconfig)))
    namespace = f"install-{uuid.uuid4().hex[:6]}"
    server = server_of(sandbox.management_kubeconfig)
    # The addon's RBAC as rendered (its Deployment cannot run here: the sandbox runs no containers).
    addon = render("addon", "--management-server", server, "--infrastructure-group", INFRA_GROUP)
    loop.run_until_complete(apply(management, [d for d in addon if d["kind"] != "Deployment"]))
    (deployment,) = [d for d in addon if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    addon_kubeconfig = sandbox.service_account_kubeconfig(
        rbac.DEFAULT_NAMESPACE, rbac.ADDON_NAME, workload=False
    )
    name = f"addon-{namespace}"
    # The Deployment's arguments, with text logs for the report, a free port instead of the pod's own,
    # and the ServiceAccount's credential instead of in-cluster configuration.
    health = procs.free_port()
    args = [a for a in container["args"] if not a.startswith(("--log-format=", "--health-address="))]
    argv = [
        sys.executable,
        "-m",
        *container["command"],
        *args,
        "--log-format=text",
        f"--health-address=127.0.0.1:{health}",
        f"--kubeconfig={addon_kubeconfig}",
    ]
    pid = procs.start(sandbox.directory, name, argv)
    s = Setup(sandbox, loop, management, workload, namespace, "autoscaled", "fixed", pid, name)
    try:
        # The readiness probe's view: the addon has listed the Clusters.
        s.wait_for("the addon's /readyz", lambda: http_ok(f"http://127.0.0.1:{health}/readyz"), timeout=60)
        s(apply(management, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]))
        s(apply(management, render("clusterclass", "--example", "sandbox", "--namespace", namespace)))
        class_name = "kapstan-sandbox"
        on = examples.cluster(s.enabled, namespace, class_name, KUBERNETES_VERSION, ENABLED)
        off = examples.cluster(s.disabled, namespace, class_name, KUBERNETES_VERSION, system_replicas=0)
        s(apply(management, [with_all_classes(on), with_all_classes(off)]))
        yield s
    finally:
        procs.stop(sandbox.directory, name, pid)
        loop.close()


def http_ok(url: str) -> bool:
    """Whether ``url`` answers 200 (a refused connection is not yet)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def delivered_kubeconfig(s: Setup) -> str | None:
    """The management kubeconfig the addon delivered to the workload cluster, once it is there."""
    secret = s(get_or_none(s.workload, SECRETS, MANAGEMENT_SECRET, rbac.DEFAULT_NAMESPACE))
    if secret is None:
        return None
    return base64.b64decode(secret["data"]["kubeconfig"]).decode()


def cluster_mds(s: Setup, cluster: str) -> list[Object]:
    """The MachineDeployments of ``cluster``, as the management API server lists them."""
    selector = {"labelSelector": f"{c.CLUSTER_NAME_LABEL}={cluster}"}
    found = s(s.management.request("GET", c.MACHINEDEPLOYMENTS, namespace=s.namespace, params=selector))
    return list(found["items"])


def bootstrap_taints(s: Setup, cluster: str) -> dict[str, list[Object]]:
    """Topology entry name to the taints of the KubeadmConfigTemplate its MD uses."""
    out = {}
    for md in cluster_mds(s, cluster):
        ref = md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"]
        template = s(s.management.get(c.KUBEADMCONFIGTEMPLATES, ref, s.namespace))
        registration = template["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]
        out[md["metadata"]["labels"][c.TOPOLOGY_DEPLOYMENT_LABEL]] = registration.get("taints", [])
    return out


def credential(s: Setup, tmp: Path) -> Path:
    """The delivered kubeconfig, written where a client can read it."""
    kubeconfig = s.wait_for("the credential in the workload cluster", lambda: delivered_kubeconfig(s))
    path = tmp / "management.kubeconfig"
    path.write_text(kubeconfig)
    return path


def status_of(s: Setup, call: Coroutine[Any, Any, Object]) -> int:
    """The HTTP status of a request: 200 when it went through."""
    try:
        s(call)
    except ApiError as error:
        return error.status
    return 200


async def absent(call: Coroutine[Any, Any, Object]) -> None:
    """Await a delete, an object already gone being what it asked for."""
    try:
        await call
    except ApiError as error:
        if not error.not_found:
            raise


def pending_workload(namespace: str) -> list[Object]:
    """A namespace and one pod that only a node of the default NodePool can take."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "inflate", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "inflate"}},
                "template": {
                    "metadata": {"labels": {"app": "inflate"}},
                    "spec": {
                        # Only a node of the default NodePool will do, not the system pool's.
                        "nodeSelector": {"karpenter.sh/nodepool": bundle.DEFAULT_NODEPOOL},
                        "containers": [
                            {
                                "name": "pause",
                                "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}},
                            }
                        ],
                    },
                },
            },
        },
    ]
