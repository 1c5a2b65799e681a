"""``kapstan addon`` as a management-cluster Deployment: ``kapstan render addon | kubectl apply -f -``.

The addon is the one piece a platform team installs by hand, once per management cluster; it installs
everything else (``kapstan.addon``). One replica without leader election: it keeps no state beyond what it
writes to the API server and every step is idempotent, so two replicas during a rollout would only do the
same work twice; ``Recreate`` avoids even that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kapstan.api.wellknown import CONTROL_PLANE_TAINT_KEY
from kapstan.install import rbac
from kapstan.install.deployment import DEFAULT_IMAGE, NONROOT, restricted_container_security

Manifest = dict[str, Any]

HEALTH_PORT = 8081  # ``kapstan addon --health-address``


def addon_deployment(
    management_server: str,
    *,
    namespace: str = rbac.DEFAULT_NAMESPACE,
    image: str = DEFAULT_IMAGE,
    workload_image: str | None = None,
    ca_data: str = "",
) -> Manifest:
    """The Deployment running ``kapstan addon`` as the ``kapstan-addon`` ServiceAccount (in-cluster).

    ``management_server`` is this cluster's API server as the workload clusters reach it: it goes into
    every credential the addon delivers. ``workload_image`` is the image the autoscaler runs in workload
    clusters (default: the addon's own).
    """
    labels = {"app.kubernetes.io/name": rbac.ADDON_NAME, "app.kubernetes.io/part-of": rbac.NAME}
    args = ["addon", f"--management-server={management_server}", f"--image={workload_image or image}"]
    if ca_data:  # a CA certificate is public: an argument is as good a place as any
        args.append(f"--management-ca-data={ca_data}")
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": rbac.ADDON_NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app.kubernetes.io/name": rbac.ADDON_NAME}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": rbac.ADDON_NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": NONROOT,
                        "runAsGroup": NONROOT,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "addon",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["kapstan"],
                            "args": [*args, f"--health-address=0.0.0.0:{HEALTH_PORT}", "--log-format=json"],
                            "ports": [{"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"}],
                            "livenessProbe": {
                                "httpGet": {"path": "/healthz", "port": "health"},
                                "initialDelaySeconds": 5,
                                "periodSeconds": 10,
                                "timeoutSeconds": 2,
                                "failureThreshold": 3,
                            },
                            "readinessProbe": {
                                "httpGet": {"path": "/readyz", "port": "health"},
                                "periodSeconds": 5,
                                "timeoutSeconds": 2,
                                "failureThreshold": 3,
                            },
                            "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
                            "resources": {
                                "requests": {"cpu": "50m", "memory": "128Mi"},
                                "limits": {"memory": "512Mi"},
                            },
                            "securityContext": restricted_container_security(),
                            # The addon writes each workload cluster's kubeconfig to a temporary file
                            # when it removes an install; / is read-only.
                            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                        }
                    ],
                    "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}],
                    "tolerations": [
                        {
                            "key": CONTROL_PLANE_TAINT_KEY,
                            "operator": "Exists",
                            "effect": "NoSchedule",
                        }
                    ],
                },
            },
        },
    }


def addon(
    management_server: str,
    *,
    namespace: str = rbac.DEFAULT_NAMESPACE,
    image: str = DEFAULT_IMAGE,
    workload_image: str | None = None,
    infrastructure_groups: Sequence[str] = (rbac.DEFAULT_INFRASTRUCTURE_GROUP,),
    ca_data: str = "",
) -> list[Manifest]:
    """The whole management-side install: namespace, RBAC and the Deployment."""
    return [
        *rbac.addon_rbac(namespace, infrastructure_groups),
        addon_deployment(
            management_server,
            namespace=namespace,
            image=image,
            workload_image=workload_image,
            ca_data=ca_data,
        ),
    ]
