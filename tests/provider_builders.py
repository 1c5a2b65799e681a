"""Builders with overrides for the fake provider's objects (``kapstan.capi.fake``), so that the provider's
own tests and the controllers' unit tests describe an MD by what differs from an ordinary one."""

from __future__ import annotations

from dataclasses import replace

from kapstan.capi.fake import FakeProvider
from kapstan.capi.provider import MachineDeploymentInfo, MachineDeploymentRef, RegistrationTaint


def make_md(ref: MachineDeploymentRef, **overrides: object) -> MachineDeploymentInfo:
    """A managed standalone MD of ``ref`` (not paused, deleting or rolling out) with no replicas, whose
    bootstrap template is named after it and carries the unregistered taint; Events about it go on it."""
    md = MachineDeploymentInfo(
        ref=ref,
        managed=True,
        topology_owned=False,
        deleting=False,
        paused=False,
        rolling_out=False,
        replicas=0,
        machines=0,
        registration_taint=RegistrationTaint.PRESENT,
        bootstrap_template=ref.name,
        event_target={
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "MachineDeployment",
            "metadata": {"name": ref.name, "namespace": ref.namespace, "uid": f"uid-{ref.name}"},
        },
    )
    return replace(md, **overrides)  # type: ignore[arg-type]


def provider_with(*mds: MachineDeploymentInfo) -> FakeProvider:
    """A fake provider whose cache holds ``mds`` and no Machine."""
    provider = FakeProvider()
    for md in mds:
        provider.put_machine_deployment(md)
    return provider
