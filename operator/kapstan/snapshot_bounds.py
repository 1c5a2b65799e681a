"""The bounds a snapshot keeps so that both engines count it exactly and the same way.

Every quantity is at most an int64 milli-value once parsed (`kapstan.api.quantity`); this adds the two
bounds no single field can give. The pods of one snapshot may not ask, all together, for more of a
resource than an int64 holds: then every sum either engine forms over pods (a node's load, a batch's
totals, the ordering's shares in i128) stays exact in Rust as it is in Python. And `simulate` expands
workloads into at most MAX_SIMULATED_PODS pods, so that `replicas: 2147483647` is an error, not an hour.
"""

from __future__ import annotations

from collections.abc import Iterable

from kapstan.api.core import Job, Pod, Workload
from kapstan.api.errors import ManifestError
from kapstan.api.quantity import MAX_MILLI
from kapstan.scheduling import model

MAX_SIMULATED_PODS = 100_000
"""Five times the largest benchmark; a simulation beyond it is a typo more often than a plan."""


def check_pod_count(workloads: Iterable[Workload], limit: int = MAX_SIMULATED_PODS) -> None:
    """Refuse, naming the workload that crosses it, more than `limit` pods in one simulation."""
    total = 0
    for workload in workloads:
        count = 1 if isinstance(workload, Pod) else workload.replica_count()
        total += count
        if total > limit:
            field = (
                ""
                if isinstance(workload, Pod)
                else "spec.parallelism"
                if isinstance(workload, Job)
                else "spec.replicas"
            )
            raise ManifestError(
                workload.ref, field, f"{count} pods take this simulation past its limit of {limit} pods"
            )


def check_request_totals(snapshot: model.Snapshot) -> None:
    """Refuse a snapshot whose pods together request more of one resource than an int64 milli-value."""
    pods = [
        *snapshot.pods,
        *(pod for node in snapshot.nodes for pod in node.pods),
        *(daemonset.pod for daemonset in snapshot.daemonsets),
    ]
    totals: dict[str, int] = {}
    for pod in pods:
        for name, amount in pod.requests.items():
            totals[name] = totals.get(name, 0) + amount
            if totals[name] > MAX_MILLI:
                raise ManifestError(
                    f"Pod {pod.namespace}/{pod.name}",
                    f"spec.containers[].resources.requests.{name}",
                    f"the pods' {name} requests add up to more than {MAX_MILLI} milli-units "
                    "(an int64, what Kubernetes and both engines count in)",
                )


def saturated(amounts: dict[str, int]) -> dict[str, int]:
    """Usage summed over many nodes, held within int64: beyond it every limit is reached anyway."""
    return {name: min(amount, MAX_MILLI) for name, amount in amounts.items()}
