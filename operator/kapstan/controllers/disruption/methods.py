"""Which command to run now: Karpenter's methods in its order, as one pure choice over what was seen.

Emptiness first (every empty, consolidatable node the budgets allow, in one delete, no solver needed),
then drift (one drifted node at a time, replaced even without a saving), then multi-node and single-node
consolidation (only in ``WhenEmptyOrUnderutilized`` pools, only consolidatable nodes). Nodes something
protects (``do-not-disrupt``, a PodDisruptionBudget) are never chosen. ``recheck`` runs the same rules
on fresh observations for the command chosen before the validation delay. A NodePool that is still
provisioning (a NodeClaim not Initialized, or pending pods it would launch a node for: ``pending.py``)
or whose Nodes are too unhealthy (``health.py``) is left alone; a replace must save ``MinSaving`` and
launch other flavors than it removes; and a pool that costs little more than its pods planned from empty
is settled (``settled.py``): no underutilized consolidation there.

The controller observes the cluster into ``Observed`` and calls these in a thread; nothing here reads
the API or the clock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from kapstan.api.karpenter import Budget
from kapstan.controllers.disruption import budgets as b
from kapstan.controllers.disruption.candidates import Candidate
from kapstan.controllers.disruption.consolidation import (
    DELETE,
    Decision,
    MinSaving,
    Solve,
    evaluate,
    multi_node,
    single_node,
    still_valid,
)
from kapstan.controllers.disruption.pending import pending_for_provisioning
from kapstan.controllers.disruption.settled import settled_pools
from kapstan.scheduling.model import Snapshot

EMPTY, UNDERUTILIZED, DRIFTED, EXPIRED = "empty", "underutilized", "drifted", "expired"
"""Disruption reasons as the ``reason`` label of ``karpenter_nodeclaims_disrupted_total`` spells them."""
BUDGET_REASON = {EMPTY: b.EMPTY, UNDERUTILIZED: b.UNDERUTILIZED, DRIFTED: b.DRIFTED}
UNDERUTILIZED_POLICY = "WhenEmptyOrUnderutilized"
_NO_SNAPSHOT = Snapshot((), (), ())


@dataclass(frozen=True)
class Observed:
    """What one pass saw: the candidates and everything the budgets and the solver need."""

    candidates: tuple[Candidate, ...]
    drifted: Mapping[str, str]
    """Claim name to why it drifted."""
    leaving: Mapping[str, tuple[str, ...]]
    """Nodes already going (deleting, tainted, under a command) to the pods a drain moves off them."""
    policies: Mapping[str, str]
    """NodePool to its consolidation policy."""
    budgets: Mapping[str, Sequence[Budget]]
    totals: Mapping[str, int]
    """NodePool to its nodes."""
    disrupting: Mapping[str, int]
    """NodePool to its nodes already being disrupted."""
    snapshot: Snapshot | None
    """None when the cluster could not be described: emptiness still works, the rest waits."""
    now: datetime
    provisioning: Mapping[str, str] = field(default_factory=dict)
    """NodePool to why it is still provisioning (a NodeClaim not Initialized yet): no voluntary
    disruption there until it is done (Karpenter's rule), or consolidation would act on a fleet that is
    still growing, remove nodes the pending pods are about to fill and evict pods for a plan that the
    next batch changes."""
    unhealthy: Mapping[str, str] = field(default_factory=dict)
    """NodePool to why too many of its Nodes are not Ready (``health.py``): no voluntary disruption
    there until they recover."""

    def halted(self, pool: str) -> str:
        """Why no voluntary disruption may touch ``pool`` now (empty when it may)."""
        return self.provisioning.get(pool) or self.unhealthy.get(pool, "")

    def allowed(self, pool: str, reason: str) -> int:
        return b.allowed(
            self.budgets.get(pool, ()),
            BUDGET_REASON[reason],
            self.totals.get(pool, 0),
            self.disrupting.get(pool, 0),
            self.now,
        )


def with_pending_pods(seen: Observed, solve: Solve) -> Observed:
    """``seen`` with the pools its pending pods would launch nodes in halted as still provisioning
    (``pending.py``); solved only when a pending pod could halt a pool that is not halted already."""
    if seen.snapshot is None or not seen.snapshot.pods:
        return seen
    if all(seen.halted(c.pool) for c in seen.candidates):
        return seen
    pending = pending_for_provisioning(seen.snapshot, solve)
    return replace(seen, provisioning={**pending, **seen.provisioning}) if pending else seen


def choose(
    seen: Observed, solve: Solve, min_saving: MinSaving, search_seconds: float
) -> tuple[str, Decision] | None:
    """The command worth running now, with its reason, or None."""
    seen = with_pending_pods(seen, solve)
    free = sorted(
        (c for c in seen.candidates if not c.blocked and not seen.halted(c.pool)),
        key=lambda c: (c.created, c.claim),
    )
    empties: list[Candidate] = []
    taken: dict[str, int] = {}
    for c in free:
        if c.empty and c.consolidatable and taken.get(c.pool, 0) < seen.allowed(c.pool, EMPTY):
            empties.append(c)
            taken[c.pool] = taken.get(c.pool, 0) + 1
    if empties:
        return EMPTY, Decision(DELETE, tuple(empties), (), seen.snapshot or _NO_SNAPSHOT)
    if seen.snapshot is None:
        return None
    for c in free:
        if c.claim in seen.drifted and seen.allowed(c.pool, DRIFTED) > 0:
            decision = evaluate(seen.snapshot, [c], seen.leaving, solve, min_saving, require_saving=False)
            if decision is not None:
                return DRIFTED, decision
    underused = [c for c in free if c.consolidatable and seen.policies.get(c.pool) == UNDERUTILIZED_POLICY]
    budget = {pool: seen.allowed(pool, UNDERUTILIZED) for pool in {c.pool for c in underused}}
    underused = [c for c in underused if budget[c.pool] > 0]
    if underused:
        settled = settled_pools(
            seen.snapshot,
            seen.candidates,
            {c.pool for c in underused},
            seen.leaving,
            solve,
            min_saving.settled_within,
        )
        underused = [c for c in underused if c.pool not in settled]
    if len(underused) >= 2:
        deadline = time.monotonic() + search_seconds
        found = multi_node(
            seen.snapshot, underused, seen.leaving, solve, min_saving, budget=budget, deadline=deadline
        )
        if found is not None and worth_it(seen, found, min_saving):
            return UNDERUTILIZED, found
    if underused:
        deadline = time.monotonic() + search_seconds
        found = single_node(seen.snapshot, underused, seen.leaving, solve, min_saving, deadline=deadline)
        if found is not None and worth_it(seen, found, min_saving):
            return UNDERUTILIZED, found
    return None


def worth_it(seen: Observed, decision: Decision, min_saving: MinSaving) -> bool:
    """Whether an underutilized command saves enough of the price of the pools it takes nodes from
    (``MinSaving.pool_fraction``); the searches return their largest saving, so none smaller passes."""
    pools = {c.pool for c in decision.candidates}
    return min_saving.worth_it(decision.saving, sum(c.price for c in seen.candidates if c.pool in pools))


def blocked_by_budgets(seen: Observed) -> dict[str, list[str]]:
    """NodePool to the reasons its budgets allow no disruption for right now, counting only reasons some
    free node of the pool would otherwise be disrupted for (so a quiet pool is not reported)."""
    out: dict[str, list[str]] = {}
    for c in seen.candidates:
        if c.blocked:
            continue
        reasons = []
        if c.empty and c.consolidatable:
            reasons.append(EMPTY)
        if c.claim in seen.drifted:
            reasons.append(DRIFTED)
        if not c.empty and c.consolidatable and seen.policies.get(c.pool) == UNDERUTILIZED_POLICY:
            reasons.append(UNDERUTILIZED)
        for reason in reasons:
            found = out.setdefault(c.pool, [])
            if reason not in found and seen.allowed(c.pool, reason) == 0:
                found.append(reason)
    return {pool: sorted(reasons) for pool, reasons in sorted(out.items()) if reasons}


def recheck(
    seen: Observed, reason: str, before: Decision, solve: Solve, min_saving: MinSaving
) -> tuple[str, Decision] | str:
    """``before`` re-decided on fresh observations: the same candidates, still free, still within the
    budgets, still for the same reason, in a pool that has no pods pending for provisioning now; a
    consolidation still at least as good. When it no longer holds, why (for the log: a decision dropped
    after the validation delay costs the delay and a pass, and the live bench drops one in three)."""
    seen = with_pending_pods(seen, solve)
    by_name = {c.claim: c for c in seen.candidates}
    chosen: list[Candidate] = []
    for c in before.candidates:
        fresh = by_name.get(c.claim)
        if fresh is None:
            return f"{c.claim} is no longer a candidate"
        why = fresh.blocked or seen.halted(fresh.pool)
        if why:
            return f"{c.claim}: {why}"
        chosen.append(fresh)
    per_pool: dict[str, int] = {}
    for c in chosen:
        per_pool[c.pool] = per_pool.get(c.pool, 0) + 1
    for pool, count in per_pool.items():
        allowed = seen.allowed(pool, reason)
        if count > allowed:
            return f"the budgets of {pool} allow {allowed} nodes for {reason}, the command takes {count}"
    if reason == EMPTY:
        busy = [c.claim for c in chosen if not (c.empty and c.consolidatable)]
        if busy:
            return f"{busy[0]} is no longer empty and consolidatable"
        return reason, Decision(DELETE, tuple(chosen), (), seen.snapshot or before.snapshot)
    if reason == UNDERUTILIZED:
        busy = [c.claim for c in chosen if not c.consolidatable]
        if busy:
            return f"{busy[0]} is no longer consolidatable (a pod came or went within consolidateAfter)"
    if reason == DRIFTED:
        settled = [c.claim for c in chosen if c.claim not in seen.drifted]
        if settled:
            return f"{settled[0]} is no longer drifted"
    if seen.snapshot is None:
        return "the cluster could not be described"
    again = evaluate(seen.snapshot, chosen, seen.leaving, solve, min_saving, require_saving=reason != DRIFTED)
    if again is None:
        return "re-planned, its pods no longer move for a saving"
    if not still_valid(before, again):
        return (
            f"re-planned as a {again.kind} at {again.new_price:g}/h where it was a {before.kind} at "
            f"{before.new_price:g}/h"
        )
    if reason == UNDERUTILIZED and not worth_it(seen, again, min_saving):
        return f"re-planned, it saves {again.saving:g}/h, less than {min_saving.pool_fraction:g} of its pools' price"
    return reason, again
