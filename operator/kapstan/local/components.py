"""Command lines of the sandbox's components and how to tell each one is ready.

Everything listens on 127.0.0.1 only, on ports picked free at start-up. The flags are those a
kubeadm-style control plane uses, trimmed to one machine: RBAC on, client certificates, a service
account key, no cloud provider, no leader election (one replica of each).
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kapstan.local.build import Artifacts
from kapstan.local.procs import free_port

SERVICE_CIDR = "10.0.0.0/24"
# kwok manages only the Nodes carrying this annotation, which our test provider sets.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node=fake"


@dataclass
class Component:
    """One process: its name, its command line, and the URL that answers 200 once it is ready."""

    name: str
    argv: list[str]
    ready_url: str
    # Client certificate needed by the readiness URL (the API server's /readyz).
    client_cert: bool = False
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Audit:
    """An audit policy file for the API servers and the directory their audit logs go to (one each)."""

    policy: Path
    directory: Path

    def log_of(self, server: str) -> Path:
        return self.directory / f"audit-{server}.log"


def probe(url: str, pki: Path, client_cert: bool) -> bool:
    """True when ``url`` answers 200. TLS is verified against the sandbox CA where it issued the cert."""
    ctx: ssl.SSLContext | None = None
    if url.startswith("https://"):
        if client_cert:
            ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
            ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        else:
            # kube-controller-manager and kube-scheduler serve a self-signed certificate of their own.
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
        return bool(resp.status == 200)


def etcd(art: Artifacts, data: Path) -> tuple[Component, str]:
    client, peer = free_port(), free_port()
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    argv = [
        str(art.sandbox),
        "etcd",
        "--name=sandbox",
        f"--data-dir={data}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=sandbox={peer_url}",
        # Throw-away data: durability buys nothing and fsync dominates latency on small disks.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]
    return Component("etcd", argv, f"{client_url}/health"), client_url


def apiserver(
    art: Artifacts, name: str, etcd_url: str, pki: Path, data: Path, audit: Audit | None = None
) -> tuple[Component, int]:
    port = free_port()
    argv = [
        str(art.sandbox),
        "kube-apiserver",
        f"--etcd-servers={etcd_url}",
        # Two API servers can share one etcd, each under its own prefix.
        f"--etcd-prefix=/registry/{name}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={data}",
        f"--tls-cert-file={pki / 'serving.crt'}",
        f"--tls-private-key-file={pki / 'serving.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        "--authorization-mode=Node,RBAC",
        f"--service-account-issuer=https://kubernetes.default.svc/{name}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
    ]
    if audit is not None:
        argv += [
            f"--audit-policy-file={audit.policy}",
            f"--audit-log-path={audit.log_of(name)}",
            # Written as requests complete (not batched), so a reader sees every request once it returns.
            "--audit-log-mode=blocking",
            "--audit-log-maxsize=0",
        ]
    return Component(f"kube-apiserver-{name}", argv, f"https://127.0.0.1:{port}/readyz", True), port


CONTROL_LOOP_API_QPS = 100
"""Requests per second (and burst) the controller-manager and the scheduler may send their API server.

client-go's defaults (controller-manager 20 / burst 30, scheduler 50 / 100) are sized for small clusters:
at 20 per second the ReplicaSets took 2-3 minutes to create bench.live's 1,000 pods and the DaemonSet
controller fell behind new Nodes, so an autoscaler on the sandbox saw pods trickle in. Kubernetes' own
scalability jobs raise both to 100 / 100 (kubernetes/test-infra,
config/jobs/kubernetes/sig-scalability/env/ci-kubernetes-e2e-scalability-common.env:
``CONTROLLER_MANAGER_TEST_ARGS=--profiling --kube-api-qps=100 --kube-api-burst=100``, the same for
``SCHEDULER_TEST_ARGS``), and so does the sandbox: a cluster meant for a thousand nodes, not an unlimited
one. kwok needs no such flag: its client has no client-side rate limit."""


def _control_loop_flags(kubeconfig: Path, port: int) -> list[str]:
    """What the controller-manager and the scheduler share: one kubeconfig for everything, serving health
    on loopback only, no leader election (one replica each), the scalability tests' API rate limits."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
        f"--kube-api-qps={CONTROL_LOOP_API_QPS}",
        f"--kube-api-burst={CONTROL_LOOP_API_QPS}",
    ]


def controller_manager(art: Artifacts, name: str, kubeconfig: Path, pki: Path) -> Component:
    port = free_port()
    argv = [
        str(art.sandbox),
        "kube-controller-manager",
        *_control_loop_flags(kubeconfig, port),
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--v=1",
    ]
    return Component(f"kube-controller-manager-{name}", argv, f"https://127.0.0.1:{port}/healthz")


def scheduler(art: Artifacts, name: str, kubeconfig: Path) -> Component:
    port = free_port()
    argv = [
        str(art.sandbox),
        "kube-scheduler",
        *_control_loop_flags(kubeconfig, port),
        "--v=1",
    ]
    return Component(f"kube-scheduler-{name}", argv, f"https://127.0.0.1:{port}/healthz")


KWOK_POD_PARALLELISM = 16
"""Pods kwok moves through their stages (Pending -> Running) at once; its default is 4. Each step is one
status write, and at 4 on a busy API server (0.1 s a write) kwok made bench.live's 1,000 bound pods Running
at about 30 a second, the last half minute of the scale-up once kube-scheduler had bound them all."""


def kwok_configuration(path: Path) -> Path:
    """kwok's options with its pod stages run ``KWOK_POD_PARALLELISM`` at once. kwok reads a configuration
    file without defaulting it (sigs.k8s.io/kwok v0.8.0 pkg/config), so every option its defaults set
    (pkg/apis/config/v1alpha1 zz_generated.defaults.go) is written out with that default."""
    options = {
        "cidr": "10.0.0.0/24",
        "manageAllNodes": False,
        "enableDebuggingHandlers": True,
        "enableContentionProfiling": False,
        "enableProfilingHandler": True,
        "podPlayStageParallelism": KWOK_POD_PARALLELISM,
        "nodePlayStageParallelism": 4,
        "nodeLeaseParallelism": 4,
        "podsOnNodeSyncParallelism": 1,
        "enablePodsOnNodeSyncListPager": True,
        "enablePodsOnNodeSyncStreamWatch": False,
    }
    document = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": options,
    }
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path


def kwok(art: Artifacts, kubeconfig: Path) -> Component:
    port = free_port()
    configuration = kwok_configuration(kubeconfig.parent / "kwok-configuration.yaml")
    argv = [
        str(art.sandbox),
        "kwok",
        f"--kubeconfig={kubeconfig}",
        f"--config={art.kwok_config}",
        f"--config={configuration}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}",
        "--node-lease-duration-seconds=40",
        f"--server-address=127.0.0.1:{port}",
    ]
    return Component("kwok", argv, f"http://127.0.0.1:{port}/healthz")


def provider(art: Artifacts, management: Path, workload: Path) -> Component:
    port = free_port()
    argv = [
        str(art.sandbox),
        "capt",
        f"--kubeconfig={management}",
        f"--workload-kubeconfig={workload}",
        f"--health-addr=127.0.0.1:{port}",
    ]
    return Component("capt", argv, f"http://127.0.0.1:{port}/readyz")


def capi_manager(art: Artifacts, management: Path, pki: Path) -> tuple[Component, int]:
    health, diagnostics, webhook = free_port(), free_port(), free_port()
    argv = [
        str(art.capi_manager),
        f"--kubeconfig={management}",
        "--leader-elect=false",
        "--feature-gates=ClusterTopology=true",
        f"--health-addr=127.0.0.1:{health}",
        f"--diagnostics-address=127.0.0.1:{diagnostics}",
        "--insecure-diagnostics",
        f"--webhook-port={webhook}",
        f"--webhook-cert-dir={pki}",
        "--webhook-cert-name=serving.crt",
        "--webhook-key-name=serving.key",
        # Our CRDs are generated fresh with only the storage version: nothing to migrate.
        "--skip-crd-migration-phases=StorageVersionMigration,CleanupManagedFields",
        "--v=2",
    ]
    return Component("capi-manager", argv, f"http://127.0.0.1:{health}/readyz"), webhook
