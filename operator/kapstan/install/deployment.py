"""``kapstan run`` as a workload-cluster Deployment, with its PodDisruptionBudget and metrics Service.

Default placement (docs/architecture.md#the-two-clusters): the operator runs in the workload cluster as the
``kapstan`` ServiceAccount from ``kapstan.install.rbac`` (in-cluster credentials for the workload side),
and reads its management credential from a Secret holding a kubeconfig, which the management-side addon
delivers. Two replicas with leader election: both keep their informers warm and report ready, only the
Lease holder acts, so losing a node costs one Lease duration, not a cold start.

The autoscaler must not run on capacity it can remove, so it stays off nodes that carry a
``karpenter.sh/nodepool`` label (as Karpenter's own chart does) and tolerates control-plane nodes, which
are often the only capacity kapstan does not manage.
"""

from __future__ import annotations

from typing import Any

import kapstan
from kapstan.api.wellknown import CONTROL_PLANE_TAINT_KEY, HOSTNAME, NODEPOOL
from kapstan.install.rbac import DEFAULT_CLUSTER, DEFAULT_LEASE, DEFAULT_NAMESPACE, NAME

Manifest = dict[str, Any]

DEFAULT_IMAGE = f"ghcr.io/kapstan/kapstan:{kapstan.__version__}"
MANAGEMENT_SECRET = "kapstan-management-kubeconfig"
MANAGEMENT_DIR = "/etc/kapstan/management"
MANAGEMENT_KUBECONFIG = f"{MANAGEMENT_DIR}/kubeconfig"
METRICS_PORT = 8080  # ``kapstan run --metrics-address``: /metrics, /healthz and /readyz
NONROOT = 65532  # distroless's "nonroot" user; any non-zero id works, the image needs no home directory


def restricted_container_security() -> dict[str, Any]:
    """The container securityContext of the restricted Pod Security Standard, for kapstan's and the addon's
    containers alike: no privilege escalation, no capabilities, a read-only root filesystem. A new dict
    each time, so that two manifests in one YAML stream never share (and alias) one object."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "autoscaler"}


def _selector() -> dict[str, str]:
    # Selectors are immutable once applied: only labels that never change between versions.
    return {"app.kubernetes.io/name": NAME}


def _probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "metrics"},
        "periodSeconds": period,
        "timeoutSeconds": 2,
        "failureThreshold": failures,
    }


def _container(cluster: str, namespace: str, image: str, lease: str) -> dict[str, Any]:
    return {
        "name": NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["kapstan"],
        "args": [
            "run",
            f"--cluster={cluster}",
            # The workload side is in-cluster: no --workload-kubeconfig.
            f"--management-kubeconfig={MANAGEMENT_KUBECONFIG}",
            "--leader-elect",
            # The Lease lives next to the Deployment, where the Role from rbac.lease_rules grants it
            # (the flag's own default, kube-system, is not kapstan's to write in).
            f"--leader-election-namespace={namespace}",
            f"--leader-election-id={lease}",
            f"--metrics-address=0.0.0.0:{METRICS_PORT}",
            "--log-format=json",
        ],
        # The root filesystem is read-only: stop Python from trying to write bytecode caches into it.
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        # /healthz answers while the event loop does, so a wedged loop is restarted. /readyz turns true
        # once every informer has synced; both replicas get there, leader or not.
        "livenessProbe": {**_probe("/healthz", 10, 3), "initialDelaySeconds": 5},
        "readinessProbe": _probe("/readyz", 5, 3),
        # No CPU limit: throttling the solver mid-batch only delays pods. The memory limit bounds a snapshot
        # of a large cluster (20k pods) with room to spare.
        "resources": {
            "requests": {"cpu": "100m", "memory": "256Mi"},
            "limits": {"memory": "1Gi"},
        },
        "securityContext": restricted_container_security(),
        "volumeMounts": [
            {"name": "management-kubeconfig", "mountPath": MANAGEMENT_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def deployment(
    cluster_namespace: str = DEFAULT_CLUSTER[0],
    cluster_name: str = DEFAULT_CLUSTER[1],
    *,
    namespace: str = DEFAULT_NAMESPACE,
    image: str = DEFAULT_IMAGE,
    replicas: int = 2,
    lease: str = DEFAULT_LEASE,
) -> list[Manifest]:
    """The Deployment, its PodDisruptionBudget and the metrics Service, in ``namespace``.

    Expects the ServiceAccount from ``rbac.workload_rbac(namespace)`` and a Secret ``MANAGEMENT_SECRET``
    with key ``kubeconfig`` for the management cluster, in ``namespace``.
    """
    cluster = f"{cluster_namespace}/{cluster_name}"
    pod_spec: dict[str, Any] = {
        "serviceAccountName": NAME,
        # Without the autoscaler nothing else gets capacity: it goes before ordinary workloads.
        "priorityClassName": "system-cluster-critical",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT,
            "runAsGroup": NONROOT,
            # The kubelet makes the Secret's files group-owned by fsGroup, so the non-root user reads them.
            "fsGroup": NONROOT,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [_container(cluster, namespace, image, lease)],
        "volumes": [
            {
                "name": "management-kubeconfig",
                # 0440: owner and the fsGroup read it, nobody writes it.
                "secret": {"secretName": MANAGEMENT_SECRET, "defaultMode": 0o440},
            },
            # Python's tempfile and anything else that needs scratch space, since / is read-only.
            {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": NODEPOOL, "operator": "DoesNotExist"}]}
                    ]
                }
            }
        },
        # Spread the replicas so one node's loss leaves a warm standby; soft, so a one-node cluster works.
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": HOSTNAME,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": _selector()},
            }
        ],
        "tolerations": [
            {"key": CONTROL_PLANE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
        ],
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": namespace, "labels": _labels()},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": _selector()},
                # Replace one replica at a time and only once its successor is ready: the standby keeps
                # the Lease within reach throughout a rollout.
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                "template": {"metadata": {"labels": _labels()}, "spec": pod_spec},
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": NAME, "namespace": namespace, "labels": _labels()},
            "spec": {
                # Drains (kapstan's own consolidation included) take one replica at a time.
                "maxUnavailable": 1,
                "selector": {"matchLabels": _selector()},
                # A replica that never got ready must not block draining the node it sits on.
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": f"{NAME}-metrics",
                "namespace": namespace,
                "labels": _labels(),
                # For Prometheus's annotation-driven service-endpoints discovery; it scrapes every replica
                # behind the Service. A ServiceMonitor can select the Service by its labels instead. The
                # pods carry no scrape annotations, so the two conventions never scrape twice.
                "annotations": {
                    "prometheus.io/scrape": "true",
                    "prometheus.io/port": str(METRICS_PORT),
                    "prometheus.io/path": "/metrics",
                },
            },
            "spec": {
                "selector": _selector(),
                "ports": [
                    {"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"}
                ],
            },
        },
    ]
