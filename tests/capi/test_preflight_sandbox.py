"""CAPI's MachineSet preflight checks against the real Cluster API manager in the sandbox (issue 15).

An MD whose Machines are a Kubernetes minor ahead of the control plane fails two of CAPI v1.14's checks
(``KubernetesVersionSkew``, ``KubeadmVersionSkew``): its MachineSet creates no Machine and says why on its own
``ScalingUp`` condition only. The launch fails at once with ``PreflightHold`` and takes its replica back;
once the control plane is at that version (an upgrade ending), the same MD launches.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from capi.capi_sandbox import machine_names, md_of, new_pool, run_on_sandbox
from kapstan.capi import LaunchRequest, PreflightHold
from kapstan.capi import contract as c
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.kube.client import Client
from kapstan.local import Sandbox
from kapstan.local.manifests import TEST_CONTROL_PLANES, a_minor_ahead

pytestmark = pytest.mark.sandbox

HELD_WITHIN = 45.0
"""Seconds a held launch may take to fail: the MachineSet's first reconcile after the scale-up, on a
loaded machine (it answers within a second or two on a quiet one); the launch timeout would be 300."""
UPGRADED_WITHIN = 90.0
"""Seconds for the control plane's status to reach its new version and the MachineSet's next check
(CAPI asks again every 15 s) to pass."""


def test_a_preflight_hold_fails_the_launch_at_once_and_ends_with_the_upgrade(sandbox: Sandbox) -> None:
    ahead = a_minor_ahead()

    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "preflight", version=ahead)
        started = time.monotonic()
        with pytest.raises(PreflightHold) as held:
            await asyncio.wait_for(provider.create(LaunchRequest("held", source)), HELD_WITHIN)
        assert time.monotonic() - started < HELD_WITHIN
        assert '"KubernetesVersionSkew" preflight check failed' in str(held.value)
        assert f"MachineSet version ({ahead.lstrip('v')})" in str(held.value)
        assert c.replicas(await md_of(client, source)) == 0, "the replica it added is taken back"
        assert await machine_names(client, source) == []

        upgrade = {"spec": {"version": ahead}}
        await client.patch(TEST_CONTROL_PLANES, "c", upgrade, namespace=source.namespace)
        deadline = time.monotonic() + UPGRADED_WITHIN
        while True:  # until the control plane reports the new version and the MachineSet checks again
            try:
                launched = await provider.create(LaunchRequest("after", source))
                break
            except PreflightHold:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(2.0)
        assert launched.nodeclaim == "after"
        assert c.replicas(await md_of(client, source)) == 1
        assert await machine_names(client, source) == [launched.ref.name]

    run_on_sandbox(sandbox, scenario)
