"""TemplateTaints on the fake provider: which MDs get a tainted template revision, and what is said.

The controller only decides (managed, standalone, its KubeadmConfigTemplate lacks the taint, not
paused); the revision itself is the provider's (``tests/capi/test_provider_reads_unit.py`` checks the
real one's writes, the sandbox tests the whole against CAPI).
"""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import FakeApi
from kapstan.capi.fake import Call, FakeProvider
from kapstan.capi.provider import (
    Conflict,
    MachineDeploymentInfo,
    MachineDeploymentRef,
    NotFound,
    Paused,
    RegistrationTaint,
)
from kapstan.controllers.templatetaints import CONFLICT_RETRY, TAINTED_REASON, TemplateTaints
from kapstan.kube.clock import FakeClock
from kapstan.kube.controller import Result
from kapstan.kube.events import EventRecorder
from provider_builders import make_md, provider_with

POOL = MachineDeploymentRef("capi", "pool")
PAUSED_RETRY = 30.0


def _md(**overrides: object) -> MachineDeploymentInfo:
    """A managed standalone MD whose template ``workers`` lacks the taint, with no Machines."""
    defaults = {"registration_taint": RegistrationTaint.MISSING, "bootstrap_template": "workers"}
    return make_md(POOL, **(defaults | overrides))


def _setup(md: MachineDeploymentInfo) -> tuple[FakeProvider, TemplateTaints, FakeApi]:
    provider = provider_with(md)
    clock = FakeClock()
    api = FakeApi(clock)  # records the Events
    events = EventRecorder(api, clock=clock)  # type: ignore[arg-type]
    return provider, TemplateTaints(provider, events, paused_retry=PAUSED_RETRY, clock=clock), api


def _reconcile(controller: TemplateTaints) -> Result:
    return asyncio.run(controller.reconcile(str(POOL)))


def test_an_md_without_machines_gets_one_revision_and_a_normal_event() -> None:
    provider, controller, api = _setup(_md())
    assert _reconcile(controller) == Result()
    assert provider.calls == [Call("ensure_registration_taint", POOL)]
    (event,) = api.events
    assert (event["type"], event["reason"]) == ("Normal", TAINTED_REASON)
    assert event["message"] == (
        "bootstrap template workers lacks the karpenter.sh/unregistered:NoExecute taint: "
        "now using workers-tainted, a copy with it"
    )
    assert _reconcile(controller) == Result()  # the MD now points at a tainted template
    assert len(provider.calls) == 1


def test_an_md_with_machines_is_warned_that_they_roll_out() -> None:
    _, controller, api = _setup(_md(machines=3, replicas=3))
    assert _reconcile(controller) == Result()
    (event,) = api.events
    assert event["type"] == "Warning"
    assert event["message"].endswith("; this rolls out the MachineDeployment's 3 Machines")


def test_mds_that_are_not_kapstans_to_taint_are_left_alone() -> None:
    for md in (
        _md(managed=False),
        _md(topology_owned=True),  # the ClusterClass patch is the place for the taint
        _md(deleting=True),
        _md(registration_taint=RegistrationTaint.PRESENT),
        _md(registration_taint=RegistrationTaint.NO_TEMPLATE),
        _md(registration_taint=RegistrationTaint.OTHER_BOOTSTRAP),
    ):
        provider, controller, api = _setup(md)
        assert _reconcile(controller) == Result(), md
        assert provider.calls == [], md
        assert api.events == [], md
    provider, controller, _ = _setup(_md())
    assert asyncio.run(controller.reconcile("capi/other")) == Result()  # not in the cache
    assert provider.calls == []


def test_a_paused_md_waits_and_is_queued_again_when_it_changes() -> None:
    provider, controller, _ = _setup(_md(paused=True))
    assert _reconcile(controller) == Result(requeue_after=PAUSED_RETRY)
    assert provider.calls == []
    provider.put_machine_deployment(_md())  # unpaused: the provider's change handler queues it
    assert len(controller.controller.queue) == 1
    assert _reconcile(controller) == Result()
    assert provider.calls == [Call("ensure_registration_taint", POOL)]


def test_typed_failures_of_the_write_are_retried_or_dropped() -> None:
    provider, controller, api = _setup(_md())
    provider.fail_next("ensure_registration_taint", Conflict("pool changed since it was read"))
    assert _reconcile(controller) == Result(requeue_after=CONFLICT_RETRY)
    provider.fail_next("ensure_registration_taint", Paused("Cluster capi/c is paused"))
    assert _reconcile(controller) == Result(requeue_after=PAUSED_RETRY)
    provider.fail_next("ensure_registration_taint", NotFound("workers not found"))
    assert _reconcile(controller) == Result()
    assert api.events == []  # nothing was written, nothing is announced
    assert _reconcile(controller) == Result()
    assert [e["reason"] for e in api.events] == [TAINTED_REASON]
    assert len(provider.calls) == 4
