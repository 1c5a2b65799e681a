"""TemplateTaints against the real API server and Cluster API manager of the sandbox.

Each test has its own namespace with a standalone Cluster ``c`` and a managed MD ``pool`` whose
KubeadmConfigTemplate ``workers`` lacks ``karpenter.sh/unregistered:NoExecute``, and checks what ends up
in the API server: the MD's bootstrap reference, the templates, the Events.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controllers.controller_helpers import (
    CLUSTER,
    MANAGED,
    MD,
    TEMPLATE,
    cluster_state,
    connect,
    create,
    eventually,
    provider_of,
    running,
    scale_to_zero,
    unique,
)
from controllers.controller_helpers import standalone_pool as pool
from kapstan.api.wellknown import REVISION_OF_ANNOTATION
from kapstan.capi import contract as c
from kapstan.capi.bootstrap import revision_name, tainted_spec
from kapstan.controllers.templatetaints import CONFLICT_RETRY, TemplateTaints
from kapstan.kube.client import Client
from kapstan.kube.controller import Result
from kapstan.kube.events import EventRecorder, list_events
from kapstan.kube.kinds import NAMESPACES
from kapstan.local import Sandbox
from kapstan.local import manifests as m

pytestmark = pytest.mark.sandbox

UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
DEDICATED = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


async def _config_ref(client: Client, ns: str, md: str = MD) -> str:
    found = await client.get(c.MACHINEDEPLOYMENTS, md, ns)
    return str(found["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"])


async def _templates(client: Client, ns: str) -> dict[str, dict[str, Any]]:
    listed = await client.request("GET", c.KUBEADMCONFIGTEMPLATES, namespace=ns)
    return {item["metadata"]["name"]: item for item in listed["items"]}


def _taints(template: dict[str, Any]) -> list[dict[str, Any]]:
    spec = template["spec"]["template"]["spec"]
    return list(spec["joinConfiguration"]["nodeRegistration"].get("taints") or [])


async def _retargeted(client: Client, ns: str) -> None:
    async def moved() -> bool:
        return await _config_ref(client, ns) != TEMPLATE

    await eventually("the MD to point at a new bootstrap template", moved)


async def _tainted_event(client: Client, ns: str) -> dict[str, Any]:
    """The one TemplateTainted Event on the MD; it trails the MD's patch, so it is waited for (while
    the controller still runs: stopping it could cut the Event off)."""
    found: list[dict[str, Any]] = []

    async def one() -> bool:
        md = await client.get(c.MACHINEDEPLOYMENTS, MD, ns)
        found[:] = [e for e in await list_events(client, md) if e["reason"] == "TemplateTainted"]
        return len(found) == 1

    await eventually("one TemplateTainted Event on the MD", one)
    return found[0]


def test_a_managed_md_gets_one_tainted_template_revision(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "taint", taints=[DEDICATED])
        original = await client.get(c.KUBEADMCONFIGTEMPLATES, TEMPLATE, ns)
        try:
            state = cluster_state(client, ns)
            async with running(state, TemplateTaints(provider_of(state), EventRecorder(client))):
                await _retargeted(client, ns)
                event = await _tainted_event(client, ns)
            name = await _config_ref(client, ns)
            assert name.startswith(f"{TEMPLATE}-kapstan-")
            revision = await client.get(c.KUBEADMCONFIGTEMPLATES, name, ns)
            assert _taints(revision) == [DEDICATED, UNREGISTERED]
            assert revision["metadata"]["annotations"][REVISION_OF_ANNOTATION] == TEMPLATE

            # The original is never modified: CAPI templates are immutable by convention.
            after = await client.get(c.KUBEADMCONFIGTEMPLATES, TEMPLATE, ns)
            assert after["spec"] == original["spec"]
            # Its metadata neither: CAPI may add owner references, which move the resourceVersion.
            for field in ("labels", "annotations", "generation"):
                assert after["metadata"].get(field) == original["metadata"].get(field), field

            assert event["type"] == "Normal"
            assert name in event["message"]
            assert "rolls out" not in event["message"]

            # A restarted operator finds nothing to do: still exactly one revision, the MD unchanged.
            again = cluster_state(client, ns)
            controller = TemplateTaints(provider_of(again), EventRecorder(client))
            async with running(again):
                assert await controller.reconcile(f"{ns}/{MD}") == Result()
                assert provider_of(again).untainted_sources() == []
            assert sorted(await _templates(client, ns)) == sorted([TEMPLATE, name])
            assert await _config_ref(client, ns) == name
        finally:
            await scale_to_zero(client, ns)

    asyncio.run(scenario())


def test_a_retry_after_a_crash_reuses_the_revision_it_already_made(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "retry")
        original = await client.get(c.KUBEADMCONFIGTEMPLATES, TEMPLATE, ns)
        # What a first attempt left behind when it died between creating the revision and patching the MD.
        spec = tainted_spec(original)
        made = revision_name(TEMPLATE, spec)
        await create(
            client,
            {
                "apiVersion": original["apiVersion"],
                "kind": original["kind"],
                "metadata": {"name": made, "namespace": ns},
                "spec": spec,
            },
        )
        try:
            state = cluster_state(client, ns)
            async with running(state, TemplateTaints(provider_of(state), EventRecorder(client))):
                await _retargeted(client, ns)
            assert await _config_ref(client, ns) == made
            assert sorted(await _templates(client, ns)) == sorted([TEMPLATE, made])
        finally:
            await scale_to_zero(client, ns)

    asyncio.run(scenario())


def test_an_md_with_machines_is_retargeted_with_a_warning_about_the_rollout(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "rollout", replicas=1)
        try:

            async def has_machine() -> bool:
                listed = await client.request(
                    "GET",
                    c.MACHINES,
                    namespace=ns,
                    params={"labelSelector": f"{c.DEPLOYMENT_NAME_LABEL}={MD}"},
                )
                return bool(listed["items"])

            await eventually("the MD's Machine", has_machine)
            state = cluster_state(client, ns)
            async with running(state, TemplateTaints(provider_of(state), EventRecorder(client))):
                await _retargeted(client, ns)
                event = await _tainted_event(client, ns)
            name = await _config_ref(client, ns)
            assert event["type"] == "Warning"
            assert name in event["message"]
            assert "rolls out the MachineDeployment's 1 Machine" in event["message"]
        finally:
            await scale_to_zero(client, ns)

    asyncio.run(scenario())


def test_a_paused_cluster_is_left_alone_until_it_is_unpaused(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "paused")
        try:
            await client.patch(c.CLUSTERS, CLUSTER, {"spec": {"paused": True}}, namespace=ns)
            state = cluster_state(client, ns)
            controller = TemplateTaints(provider_of(state), EventRecorder(client), paused_retry=0.5)
            async with running(state):
                result = await controller.reconcile(f"{ns}/{MD}")
                assert result.requeue_after == 0.5
                assert await _config_ref(client, ns) == TEMPLATE
                assert sorted(await _templates(client, ns)) == [TEMPLATE]

                await client.patch(c.CLUSTERS, CLUSTER, {"spec": {"paused": False}}, namespace=ns)

                async def unpaused() -> bool:
                    cluster = state.cluster_object()
                    return cluster is not None and not c.cluster_paused(cluster)

                await eventually("the informer to see the Cluster unpaused", unpaused)
                # CAPI reconciles the MD as soon as its Cluster is unpaused, so the first write may meet a
                # newer MD (409): the controller asks to be requeued, as the work queue would do.
                results = [await controller.reconcile(f"{ns}/{MD}")]
                while results[-1] == Result(requeue_after=CONFLICT_RETRY) and len(results) < 10:
                    await asyncio.sleep(CONFLICT_RETRY)
                    results.append(await controller.reconcile(f"{ns}/{MD}"))
                assert results[-1] == Result(), results
            assert await _config_ref(client, ns) != TEMPLATE
        finally:
            await scale_to_zero(client, ns)

    asyncio.run(scenario())


def test_an_unmanaged_md_is_not_touched(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "unmanaged", annotations={})
        try:
            state = cluster_state(client, ns)
            controller = TemplateTaints(provider_of(state), EventRecorder(client))
            async with running(state):
                assert await controller.reconcile(f"{ns}/{MD}") == Result()
                assert provider_of(state).untainted_sources() == []
            assert await _config_ref(client, ns) == TEMPLATE
            assert sorted(await _templates(client, ns)) == [TEMPLATE]
        finally:
            await scale_to_zero(client, ns)

    asyncio.run(scenario())


def test_a_topology_md_is_reported_not_rewritten(sandbox: Sandbox) -> None:
    """The ClusterClass owns a topology MD's templates: kapstan names the worker class instead."""

    async def scenario() -> None:
        client = await connect(sandbox)
        ns = unique("ctl-topology")
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        class_manifests = m.cluster_class("kapstan-class", ns, {"c3-8": (TEMPLATE, "c3-8")})
        class_manifests[-1]["spec"]["workers"]["machineDeployments"][0]["metadata"] = {
            "annotations": dict(MANAGED)
        }
        for manifest in [
            m.flavor_template("c3-8", ns),
            m.kubeadm_config_template(TEMPLATE, ns),
            *class_manifests,
            m.topology_cluster(CLUSTER, ns, "kapstan-class", [("c3-8", "md-0", 0)]),
        ]:
            await create(client, manifest)
        try:
            state = cluster_state(client, ns)
            controller = TemplateTaints(provider_of(state), EventRecorder(client))
            async with running(state):

                async def generated() -> bool:
                    return any(
                        c.labels_of(md).get(c.TOPOLOGY_DEPLOYMENT_LABEL) == "md-0"
                        and state.bootstrap_templates.store.get_by_name(
                            str(md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"]), ns
                        )
                        is not None
                        for md in state.machine_deployments.store.objects()
                    )

                await eventually("the topology's MachineDeployment and its template", generated)
                (md,) = state.machine_deployments.store.objects()
                before = md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"]
                assert await controller.reconcile(f"{ns}/{c.name(md)}") == Result()
                (missing,) = provider_of(state).untainted_sources()
                assert missing.startswith(f"worker class c3-8 (MachineDeployment {ns}/{c.name(md)})")
            assert await _config_ref(client, ns, c.name(md)) == before
            assert not [t for t in await _templates(client, ns) if "-kapstan-" in t]
        finally:
            await scale_to_zero(client, ns)

    asyncio.run(scenario())
