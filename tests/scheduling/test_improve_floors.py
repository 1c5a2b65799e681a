"""The cost pass gives a move up before opening a claim that could only reach the move's ceiling.

A new claim costs at least the cheapest available offering of a flavor that holds its first pod (the
pod's floor); when the claims already made plus that floor reach what the move has to beat, opening the
claim and then checking its price could only give the move up too. Skipping the opening spends the same
placements and changes no plan (both engines' plans on the bench workloads are byte-identical), so what
the tests can see is that no claim is opened.
"""

from __future__ import annotations

import math

from builders import GI, make_flavor, make_pod, snapshot
from kapstan.scheduling.greedy import Scheduler
from kapstan.scheduling.improve import Budget, Floors, _replace, take_off


def catalog() -> tuple[object, ...]:
    return (
        make_flavor("c2", 2, 8 * GI, price=0.1),
        make_flavor("c8", 8, 32 * GI, price=0.38),
        make_flavor("c16", 16, 64 * GI, price=5.0),
    )


def test_a_pods_floor_is_the_cheapest_flavor_that_holds_it() -> None:
    small, large, huge = make_pod("small", 1), make_pod("large", 4), make_pod("huge", 32)
    floors = Floors(Scheduler(snapshot([small, large, huge], flavors=catalog())))
    assert floors.of(small) == 0.1
    assert floors.of(large) == 0.38
    assert floors.of(huge) == math.inf


def scheduled_pod() -> tuple[Scheduler, object]:
    """A scheduler whose only claim (one 4-CPU pod on a c8) is taken off, as a move takes its claims."""
    scheduler = Scheduler(snapshot([make_pod("large", 4)], flavors=catalog()))
    assert scheduler.schedule() == {}
    (claim,) = scheduler.claims
    assert claim.chosen.name == "c8"
    take_off(scheduler, [claim])
    return scheduler, claim.pods[0]


def test_a_claim_that_would_reach_the_ceiling_is_not_opened() -> None:
    scheduler, pod = scheduled_pod()
    budget, opened_before = Budget(10), scheduler.next_index
    assert _replace(scheduler, [pod], None, budget, {}, Floors(scheduler), ceiling=0.38) is None
    assert scheduler.next_index == opened_before
    assert scheduler.claims == []
    assert budget.left == 9  # the pod's placement is spent, as when the claim was opened and dropped


def test_a_claim_below_the_ceiling_is_still_opened() -> None:
    scheduler, pod = scheduled_pod()
    created = _replace(scheduler, [pod], None, Budget(10), {}, Floors(scheduler), ceiling=0.39)
    assert created is not None
    assert [c.chosen.name for c in created] == ["c8"]
    assert scheduler.next_index == 2
