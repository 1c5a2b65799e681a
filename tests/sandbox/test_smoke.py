"""The real kube-scheduler binds a Deployment's pods to a kwok Node and kwok runs them."""

from __future__ import annotations

from typing import Any

import kr8s
from kr8s.objects import Deployment, Node, Pod
from sandbox_helpers import get, namespace, wait_for

from kapstan.local import Sandbox


def _ready(node: Any) -> bool:
    node.refresh()
    conditions: list[dict[str, Any]] = node.raw.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_scheduler_binds_pods_to_a_kwok_node_and_they_run(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.workload_kubeconfig))
    ns = namespace(api, "smoke")
    node = Node(
        {
            "metadata": {
                "name": "smoke-node",
                "labels": {"kubernetes.io/hostname": "smoke-node", "type": "kwok"},
                "annotations": {"kwok.x-k8s.io/node": "fake"},
            },
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            },
        },
        api=api,
    )
    node.create()
    wait_for("smoke-node Ready", lambda: _ready(node))

    labels = {"app": "smoke"}
    Deployment(
        {
            "metadata": {"name": "smoke", "namespace": ns},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": {"kubernetes.io/hostname": "smoke-node"},
                        "containers": [
                            {"name": "app", "image": "app", "resources": {"requests": {"cpu": "500m"}}}
                        ],
                    },
                },
            },
        },
        api=api,
    ).create()

    def running() -> list[Pod] | None:
        pods = get(api, "pods", namespace=ns, label_selector=labels)
        ok = len(pods) == 3 and all(
            p.raw["spec"].get("nodeName") == "smoke-node"
            and p.raw.get("status", {}).get("phase") == "Running"
            for p in pods
        )
        return pods if ok else None

    pods = wait_for("3 Running pods on smoke-node", running)
    # Bound by the scheduler (a Binding), not by us: the scheduler records a Scheduled event per pod.
    events = get(api, "events", namespace=ns, field_selector="reason=Scheduled")
    assert {e.raw["involvedObject"]["name"] for e in events} >= {p.name for p in pods}
