"""Pods on a node being deleted, as kube-scheduler still sees them (``kapstan.snapshot``'s rule for them).

Karpenter plans the reschedulable pods of a deleting node again at once, so their new room is ready
before they are evicted. But until the eviction they are running where they are, and kube-scheduler
counts them there: PodTopologySpread counts every pod that is not terminating on every node carrying
the topology key (a tainted or cordoned node too, `nodeTaintsPolicy: Ignore` by default), and
InterPodAffinity counts them as well. A snapshot without them lets the solver put a pending pod in a
zone that looks emptier than kube-scheduler finds it: the plan opens no NodeClaim, kube-scheduler refuses
the pod, and when a PodDisruptionBudget holds the eviction back because that very pod is not available,
nothing ever changes (issue 14: 4 `web` pods of a hard zone spread Pending for 1,473 s on the live bench).

So a pod of a deleting node that a pending pod's hard constraint counts, or whose own required
anti-affinity picks a pending pod, stays on its node in the snapshot, and the node stays as one that
takes no new pod; it is planned once its eviction makes it pending. The others are planned again at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kapstan.scheduling.model import Pod
from kapstan.scheduling.topology import Group, spread_group, term_group


def counted_until_evicted(leaving: Iterable[Pod], unbound: Sequence[Pod]) -> set[str]:
    """Keys of the ``leaving`` pods (on deleting nodes, not terminating) that kube-scheduler's decision
    on one of the ``unbound`` pods depends on."""
    groups: set[Group] = set()
    for pod in unbound:
        groups.update(
            spread_group(pod, constraint)
            for constraint in pod.spread
            if constraint.when_unsatisfiable == "DoNotSchedule"
        )
        groups.update(term_group(term) for term in (*pod.affinity, *pod.anti_affinity))
    kept = set()
    for pod in leaving:
        own = [term_group(term) for term in pod.anti_affinity]
        if any(group.selects(pod) for group in groups) or any(
            group.selects(other) for group in own for other in unbound
        ):
            kept.add(pod.key)
    return kept
