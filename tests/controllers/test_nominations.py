"""Nominations last their window, and a later nomination extends, never shortens, it."""

from __future__ import annotations

from kapstan.controllers.nominations import Nominations
from kapstan.kube.clock import FakeClock


def test_a_nomination_holds_for_its_window_and_then_lapses() -> None:
    clock = FakeClock()
    nominations = Nominations(clock)
    nominations.nominate(["node-a", "claim-b"], 20.0)
    assert nominations.active("node-a") and nominations.active("claim-b")
    assert not nominations.active("node-c")
    clock.advance(19.9)
    assert nominations.active("node-a")
    clock.advance(0.1)
    assert not nominations.active("node-a") and not nominations.active("claim-b")


def test_a_later_nomination_extends_and_a_shorter_one_does_not_cut() -> None:
    clock = FakeClock()
    nominations = Nominations(clock)
    nominations.nominate(["node-a"], 20.0)
    clock.advance(15.0)
    nominations.nominate(["node-a"], 20.0)
    clock.advance(10.0)
    assert nominations.active("node-a")  # 25 s after the first, 10 s into the second
    nominations.nominate(["node-a"], 1.0)
    clock.advance(5.0)
    assert nominations.active("node-a")  # the shorter one did not cut the second window short
    clock.advance(5.0)
    assert not nominations.active("node-a")
