"""The placement loop (twin of `rust/src/solver/greedy/placement.rs`): each pod onto the first target that
takes it (existing nodes, claims that keep their flavor, claims that grow, a new claim), preferences
relaxed one at a time, failed pods retried while a round places something.
"""

from __future__ import annotations

from kapstan.scheduling import resources as res
from kapstan.scheduling.greedy.checks import Checks
from kapstan.scheduling.greedy.claims import Claiming
from kapstan.scheduling.greedy.order import placement_sequence
from kapstan.scheduling.model import Pod
from kapstan.scheduling.preferences import Preferences
from kapstan.scheduling.targets import Claim, ExistingTarget

NO_MANAGED_FLAVOR = (
    "kapstan manages no flavor yet: mark a MachineDeployment, or a ClusterClass worker class in its "
    'metadata, with the label node.cluster.x-k8s.io/karpenter-member or the annotation kapstan.io/managed: "true"'
)
"""Why nothing can be provisioned while the catalog is empty: what a user has to do, not what each
NodePool lacks (every one of them would say that no flavor matches)."""


class Placing(Claiming):
    """The scheduler's loop over pods and targets."""

    def place_existing(self, target: ExistingTarget, pod: Pod) -> None:
        target.used = res.add(target.used, pod.requests)
        target.ports.extend(pod.host_ports)
        target.placed.append(pod.key)
        self.topology.record(pod, target.domain, target.node.taints)

    def place(self, checks: Checks) -> str | None:
        """Place the pod on the first target that takes it; the reason it failed otherwise.

        Claims are scanned twice: first for one whose current flavor still has room (the pod costs
        nothing there), then for one that can grow into a bigger flavor. Filling the spare room of small
        nodes first is what keeps anti-affine pods' nodes from standing half empty."""
        for target in self.existing:
            if self.fits_existing(target, checks):
                self.place_existing(target, checks.pod)
                return None
        requests = checks.pod.requests
        if not self.every_claim_excludes(checks):
            for claim in self.claims:
                if (
                    res.fits(claim.used, requests, claim.chosen.net)
                    and self.try_claim(claim, checks, True) is None
                ):
                    return None
            for claim in self.claims:
                if self.might_take(claim, checks) and self.try_claim(claim, checks) is None:
                    return None
        if not self.pools:
            return "no NodePool exists"
        if not self.snapshot.instance_types:
            return NO_MANAGED_FLAVOR
        reasons = []
        for view in self.pools:
            opened = self.open_claim(view, checks)
            if isinstance(opened, Claim):
                return None
            reasons.append(f"NodePool {view.pool.name}: {opened}")
        return "; ".join(reasons)

    def place_with_relaxation(self, pod: Pod) -> str | None:
        prefs = Preferences.strict(pod)
        while True:
            reason = self.place(self.checks(pod, prefs))
            if reason is None:
                self.placed_prefs[pod.key] = prefs
                return None
            if not prefs.relax():
                return reason

    def schedule(self) -> dict[str, str]:
        """Place every pending pod it can; returns the reasons of those it cannot."""
        pending = placement_sequence(self.snapshot.pods)
        failures: dict[str, str] = {}
        while pending:
            failures = {}
            retry = []
            for pod in pending:
                reason = self.place_with_relaxation(pod)
                if reason is not None:
                    failures[pod.key] = reason
                    retry.append(pod)
            if len(retry) == len(pending):
                break
            pending = retry
        return failures
