"""Drift: the NodePool's template hash, its requirements, and what CAPI made the Machine from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from disruption_helpers import claim

from kapstan.api.wellknown import NODEPOOL_HASH_VERSION
from kapstan.capi.drift import machine_drift
from kapstan.controllers.disruption.drift import expired, nodepool_drift, requirements_drift
from kapstan.controllers.nodeclaim_template import nodepool_hash

POOL = {"metadata": {"name": "pool"}, "spec": {"template": {"spec": {"requirements": []}}}}


def _hashed(pool: dict, version: str = NODEPOOL_HASH_VERSION) -> dict:
    return claim(
        annotations={
            "karpenter.sh/nodepool-hash": nodepool_hash(pool),
            "karpenter.sh/nodepool-hash-version": version,
        }
    )


def test_a_changed_template_is_drift_unless_the_hash_version_differs() -> None:
    made = _hashed(POOL)
    assert nodepool_drift(made, POOL) == ""
    changed = {
        **POOL,
        "spec": {"template": {"metadata": {"labels": {"team": "b"}}, "spec": {"requirements": []}}},
    }
    assert nodepool_drift(made, changed) == "NodePoolDrifted"
    assert nodepool_drift(_hashed(POOL, version="v0"), changed) == ""


def test_requirements_drift_checks_the_labels_the_claim_carries() -> None:
    made = claim(flavor="c3-8")
    assert (
        requirements_drift(
            made, [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-8", "c3-16"]}]
        )
        == ""
    )
    assert (
        requirements_drift(
            made, [{"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["c3-8"]}]
        )
        == "RequirementsDrifted"
    )
    assert requirements_drift(made, [{"key": "example.com/team", "operator": "In", "values": ["a"]}]) == ""


def _md(
    bootstrap: str = "workers-v2",
    infrastructure: str = "c3-8",
    version: str = "v1.33.0",
    strategy: str = "OnDelete",
) -> dict:
    return {
        "spec": {
            "rollout": {"strategy": {"type": strategy}},
            "template": {
                "spec": {
                    "version": version,
                    "bootstrap": {"configRef": {"name": bootstrap}},
                    "infrastructureRef": {"name": infrastructure},
                }
            },
        }
    }


def test_capi_drift_compares_what_the_machine_was_cloned_from_with_the_md_now() -> None:
    machine = {"spec": {"version": "v1.33.0"}}
    assert machine_drift(machine, _md(), "workers-v2", "c3-8") == ""
    assert machine_drift(machine, _md(), "workers-v1", "c3-8") == "BootstrapTemplateDrifted"
    assert machine_drift(machine, _md(), "workers-v2", "c3-8-old") == "InfrastructureTemplateDrifted"
    assert machine_drift(machine, _md(version="v1.34.0"), "workers-v2", "c3-8") == "KubernetesVersionDrifted"
    assert machine_drift(machine, _md(), None, None) == ""


def test_capi_drift_leaves_a_rolling_update_md_to_capi() -> None:
    machine = {"spec": {"version": "v1.33.0"}}
    rolling = _md(version="v1.34.0", strategy="RollingUpdate")
    assert machine_drift(machine, rolling, "workers-v1", "c3-8-old") == ""
    del rolling["spec"]["rollout"]  # RollingUpdate is CAPI's default
    assert machine_drift(machine, rolling, "workers-v1", "c3-8-old") == ""


def test_expiration_counts_from_creation_and_never_never_expires() -> None:
    made = claim(created="2026-11-30T10:00:00Z")
    start = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert not expired(made, timedelta(hours=1), start + timedelta(minutes=59))
    assert expired(made, timedelta(hours=1), start + timedelta(hours=1))
    assert not expired(made, None, start + timedelta(days=3650))
