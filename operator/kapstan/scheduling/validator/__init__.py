"""Checks any plan against its snapshot, independently of how the plan was made.

It looks only at the final state: which pods end up on which node, with which labels, taints and
capacity. Every hard constraint is checked (preferences are not: they are allowed to be relaxed). The
tests run it on every plan either engine produces, so a solver bug shows up as a named violation.

One module a kind of check: `hosts` builds the final state and checks each node alone, `accounting` the
plan's totals, `topology` the cross-pod rules (with `affinity` for kube-scheduler's binding order), and
`alternatives` each claim's stand-in flavors. The package imports none of the engines' modules (an
import-linter contract in pyproject.toml), only the shared definitions.
"""

from __future__ import annotations

from kapstan.scheduling.model import Plan, Snapshot
from kapstan.scheduling.validator.accounting import check_accounting, check_limits
from kapstan.scheduling.validator.alternatives import check_alternatives
from kapstan.scheduling.validator.hosts import build_hosts, check_host
from kapstan.scheduling.validator.topology import check_topology

__all__ = ["validate"]


def validate(snapshot: Snapshot, plan: Plan) -> list[str]:
    """Every way the plan breaks a hard constraint of the snapshot; empty when the plan is valid."""
    violations: list[str] = []
    pods = {pod.key: pod for pod in snapshot.pods}
    hosts = build_hosts(snapshot, plan, pods, violations)
    check_accounting(plan, pods, violations)
    check_limits(snapshot, plan, violations)
    for host in hosts:
        violations += check_host(host)
    check_topology(snapshot, hosts, violations)
    check_alternatives(snapshot, plan, hosts, violations)
    return violations
