"""A NodeClaim's ``Consolidatable`` condition is written with a JSON patch testing the condition list it
replaces, not the claim's resourceVersion: a status write since the read that leaves the conditions alone
(``lastPodEventTime``, the lifecycle's ``capacity``) must not refuse it (it did, as a 409, and the
condition waited for a pass with no write in between), while a condition written since must, and is kept.
Runs a disruption pass on the fake API and a fake clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from controllers.fake_cluster import World, world
from disruption.test_gather_once_unit import NODE, _disruption, _initialized_claim_on_a_node, _pass
from kapstan.api.wellknown import CONSOLIDATABLE
from kapstan.controllers import conditions as cond
from kapstan.kube.client import Object
from kapstan.kube.kinds import NODECLAIMS

DRIFTED = {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted", "message": ""}


def _busy_claim(w: World) -> str:
    """A claim not yet marked Consolidatable, with a pod no other node could take: nothing to do but mark."""
    claim = _initialized_claim_on_a_node(w, marked=False)
    w.pod("web", NODE)
    return claim


def _pod_event_written(claim: Object) -> None:
    claim["status"]["lastPodEventTime"] = "2026-01-01T00:00:00Z"


def _capacity_written(claim: Object) -> None:
    claim["status"]["capacity"] = {"cpu": "4"}


def _drifted_once(claim: Object) -> None:
    if DRIFTED not in cond.conditions_of(claim):
        claim["status"]["conditions"].append(DRIFTED)


@pytest.mark.parametrize("since", [_pod_event_written, _capacity_written], ids=["pod event", "capacity"])
def test_a_status_write_since_the_read_does_not_refuse_the_consolidatable_condition(
    since: Callable[[Object], None],
) -> None:
    w = world()
    claim = _busy_claim(w)
    w.before_patches(NODECLAIMS, since)
    _pass(w, _disruption(w))
    assert cond.find(w.claim_now(claim), CONSOLIDATABLE) is not None


def test_a_condition_written_since_the_read_refuses_the_consolidatable_condition_and_is_kept() -> None:
    w = world()
    claim = _busy_claim(w)
    w.before_patches(NODECLAIMS, _drifted_once)
    disruption = _disruption(w)
    _pass(w, disruption)
    assert cond.find(w.claim_now(claim), CONSOLIDATABLE) is None
    assert DRIFTED in cond.conditions_of(w.claim_now(claim))
    _pass(w, disruption)
    assert cond.find(w.claim_now(claim), CONSOLIDATABLE) is not None
    assert DRIFTED in cond.conditions_of(w.claim_now(claim))
