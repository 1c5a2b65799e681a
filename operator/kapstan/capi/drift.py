"""CAPI drift: is a Machine still what its MachineDeployment would make today?

Only on MDs whose rollout strategy is ``OnDelete``: there the Machine was made from another bootstrap or
infrastructure template than its MD uses now (a new KubeadmConfigTemplate revision, a new machine
template), or for another Kubernetes version, and CAPI leaves it until someone deletes it. CAPI records
what a Machine was cloned from (``cluster.x-k8s.io/cloned-from-name`` on its bootstrap config and
infrastructure machine); ``cloned_from`` reads that, ``machine_drift`` compares. The disruption controller
asks through ``CloudProvider.drift`` and replaces a drifted claim's node.
"""

from __future__ import annotations

from typing import Any, Protocol

from kapstan.api.wellknown import CLONED_FROM_NAME_ANNOTATION
from kapstan.capi import contract as c
from kapstan.kube.client import Object
from kapstan.kube.errors import ApiError


class ObjectsByReference(Protocol):
    """``kube.refcache.TemplateCache``: objects of any kind by (API group, kind, namespace, name)."""

    async def get(self, api_group: str, kind: str, namespace: str, name: str) -> Object | None: ...


def machine_drift(
    machine: Object, md: Object, bootstrap_from: str | None, infrastructure_from: str | None
) -> str:
    """The Machine against its MD's template now. ``*_from`` are the templates the Machine's bootstrap
    config and infrastructure machine were cloned from (None when unknown: no drift claimed).

    Only an ``OnDelete`` MD's Machines drift: with ``RollingUpdate`` CAPI replaces outdated Machines by
    itself, and a kapstan replacement would race it (CAPI refuses nothing, kapstan refuses to delete from
    an MD that is rolling out, so the command would fail and roll back over and over)."""
    if not c.on_delete(md):
        return ""
    template = md.get("spec", {}).get("template", {}).get("spec", {})
    version = template.get("version")
    have = machine.get("spec", {}).get("version")
    if version and have and version != have:
        return "KubernetesVersionDrifted"
    wanted_bootstrap = (template.get("bootstrap", {}).get("configRef") or {}).get("name")
    if bootstrap_from and wanted_bootstrap and bootstrap_from != wanted_bootstrap:
        return "BootstrapTemplateDrifted"
    wanted_infrastructure = (template.get("infrastructureRef") or {}).get("name")
    if infrastructure_from and wanted_infrastructure and infrastructure_from != wanted_infrastructure:
        return "InfrastructureTemplateDrifted"
    return ""


async def cloned_from(objects: ObjectsByReference, machine: Object, path: tuple[str, ...]) -> str | None:
    """The template the Machine's bootstrap config or infrastructure machine (the reference at ``path``)
    was cloned from; None when the reference, the object or the annotation is missing or unreadable."""
    ref: Any = machine
    for step in path:
        ref = ref.get(step) if isinstance(ref, dict) else None
    if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
        return None
    group = ref.get("apiGroup") or str(ref.get("apiVersion", "")).rpartition("/")[0]
    try:
        found = await objects.get(group, ref["kind"], c.namespace(machine), ref["name"])
    except ApiError:
        return None
    if found is None:
        return None
    return c.annotations_of(found).get(CLONED_FROM_NAME_ANNOTATION)
