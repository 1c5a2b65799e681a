"""The drain of a deleting NodeClaim is bounded by its ``terminationGracePeriod``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kapstan.controllers.nodeclaim.termination import _grace_over

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _claim(grace: str | None, deleting_for: timedelta) -> dict:
    started = (NOW - deleting_for).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec = {"terminationGracePeriod": grace} if grace else {}
    return {"metadata": {"name": "c", "deletionTimestamp": started}, "spec": spec}


def test_pods_are_forced_out_only_once_the_grace_period_has_run_out() -> None:
    assert not _grace_over(_claim("10m", timedelta(minutes=9)), NOW)
    assert _grace_over(_claim("10m", timedelta(minutes=10, seconds=1)), NOW)
    assert not _grace_over(_claim(None, timedelta(days=1)), NOW)  # no bound: evictions wait on PDBs forever
    assert not _grace_over(_claim("soon", timedelta(days=1)), NOW)
