"""Which domains of a required pod-affinity group kube-scheduler can ever fill (the validator's rule).

kube-scheduler binds a pod with a required affinity term only into a domain that already holds a pod the
term selects, except the cluster's very first such pod, which may open any domain if it selects itself
(InterPodAffinity's Filter: no matching pod anywhere and the pod matches all its own terms). So in a final
state each domain holding pods of the group must have been opened by a pod that needed nobody there: one
that ran before the plan, or one that does not carry the term. Every other domain needs the group's first
pod, and only one domain can have it (none once a pod of the group ran before the plan). A count of the
final state alone cannot see this: 152 pods of a self-affine group in one zone and 1 in another, or 3 and
3, each have company in their domain, yet no order of bindings reaches either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kapstan.scheduling.model import Pod
from kapstan.scheduling.topology import Group, term_group

Located = tuple[Pod, Callable[[str], str | None], bool]
"""A pod of the final state, its node's label lookup, and whether it ran before the plan."""


def unreachable_domains(group: Group, located: Iterable[Located]) -> set[str]:
    """The domains of `group`'s key holding its pods that no order of bindings lets kube-scheduler fill."""
    holding: dict[str, int] = {}
    opened: set[str] = set()
    ran_before = False
    for pod, label, existing in located:
        if not group.selects(pod):
            continue
        ran_before = ran_before or existing
        domain = label(group.key)
        if domain is None:
            continue
        holding[domain] = holding.get(domain, 0) + 1
        if existing or all(term_group(term) != group for term in pod.affinity):
            opened.add(domain)
    closed = sorted((d for d in holding if d not in opened), key=lambda d: (-holding[d], d))
    # The group's first pod opens one closed domain (the fullest, so the fewest pods are called wrong).
    return set(closed if ran_before else closed[1:])
