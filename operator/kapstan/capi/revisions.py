"""Bootstrap template revisions: the provider's half of putting the unregistered taint into an MD.

The template-taints controller decides which MD needs the taint (managed, standalone, its
KubeadmConfigTemplate lacks it, not paused) from ``machine_deployment``; this writes it: the revision
first (named after a hash of its spec, so a retry after a crash finds it instead of making another), then
the MD's bootstrap reference, conditional on that reference alone. ``MachineDeploymentProvider``
inherits these methods.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

from kapstan.api.wellknown import REVISION_OF_ANNOTATION
from kapstan.capi import bootstrap as b
from kapstan.capi import contract as c
from kapstan.capi.cache import BY_DEPLOYMENT, ManagementCache
from kapstan.capi.provider import (
    Conflict,
    MachineDeploymentInfo,
    MachineDeploymentRef,
    NotFound,
    Paused,
    RegistrationTaint,
    TemplateRevision,
)
from kapstan.kube.client import Client, Object
from kapstan.kube.errors import ApiError
from kapstan.kube.jsonpatch import as_read, patch_if_unchanged, set_members
from kapstan.kube.store import Event

# kubectl's record of the original's last apply: on the copy it would lie about how the copy was made.
CONFIG_REF = ("spec", "template", "spec", "bootstrap", "configRef")
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


class TemplateRevisions:
    _client: Client
    _cache: ManagementCache

    def machine_deployment(self, ref: MachineDeploymentRef) -> MachineDeploymentInfo | None:
        md = self._cache.machine_deployments.store.get_by_name(ref.name, ref.namespace)
        return None if md is None else self._info(md)

    def on_machine_deployment_change(self, handler: Callable[[MachineDeploymentRef], None]) -> None:
        def on_md(event: Event) -> None:
            handler(_ref(event.object))

        def on_template(event: Event) -> None:
            # A template that appears late (a cache still filling, a user fixing a typo) unblocks its MDs.
            name, namespace = c.name(event.object), c.namespace(event.object)
            for md in self._cache.machine_deployments.store.objects():
                if c.namespace(md) == namespace and b.bootstrap_ref(md).get("name") == name:
                    handler(_ref(md))

        def on_cluster(event: Event) -> None:
            if c.name(event.object) == self._cache.cluster:  # unpaused: look at every MD again
                for md in self._cache.machine_deployments.store.objects():
                    handler(_ref(md))

        self._cache.machine_deployments.add_handler(on_md)
        self._cache.bootstrap_templates.add_handler(on_template)
        self._cache.clusters.add_handler(on_cluster)

    def untainted_sources(self) -> builtins.list[str]:
        return b.untainted_sources(self._cache)

    async def ensure_registration_taint(self, ref: MachineDeploymentRef) -> TemplateRevision:
        what = f"tainting the bootstrap template of MachineDeployment {ref}"
        md = self._cache.machine_deployments.store.get_by_name(ref.name, ref.namespace)
        if md is None:
            raise NotFound(f"{what}: it does not exist")
        info = self._info(md)
        if info.paused:
            raise Paused(f"{what}: it or its Cluster is paused")
        original = b.bootstrap_template(self._cache, b.bootstrap_ref(md), ref.namespace)
        if original is None:
            raise NotFound(f"{what}: {b.BOOTSTRAP_KIND} {ref.namespace}/{info.bootstrap_template} not found")
        revision = await self._write_revision(original)
        # The revision is made from the template the MD pointed at, so the write tests that reference
        # alone, not the MD's resourceVersion, which CAPI's status writes move all through a scale-up.
        patch = set_members(
            md, CONFIG_REF, {"name": c.name(revision)}, tested=as_read(md, CONFIG_REF, "name")
        )
        pointed = await patch_if_unchanged(
            self._client, c.MACHINEDEPLOYMENTS, ref.name, patch, namespace=ref.namespace
        )
        if pointed is None:
            raise Conflict(f"{what}: its bootstrap template changed since it was read")
        return TemplateRevision(self._info(pointed), c.name(original), c.name(revision), info.machines)

    async def _write_revision(self, original: Object) -> Object:
        spec = b.tainted_spec(original)
        namespace, name = c.namespace(original), c.name(original)
        annotations = {
            key: value for key, value in c.annotations_of(original).items() if key not in _DROPPED_ANNOTATIONS
        }
        annotations[REVISION_OF_ANNOTATION] = name
        body: Object = {
            "apiVersion": original.get("apiVersion") or c.KUBEADMCONFIGTEMPLATES.api_version,
            "kind": b.BOOTSTRAP_KIND,
            "metadata": {
                # Owner references are left to CAPI: the MD controller adds the Cluster as owner of the
                # templates its MDs use, and copying the original's would tie the copy to its lifetime.
                "name": b.revision_name(name, spec),
                "namespace": namespace,
                "labels": c.labels_of(original),
                "annotations": annotations,
            },
            "spec": spec,
        }
        try:
            return await self._client.create(c.KUBEADMCONFIGTEMPLATES, body)
        except ApiError as error:
            if not error.conflict:
                raise
        # AlreadyExists: made by an earlier attempt that did not get to point the MD at it.
        existing = await self._client.get(c.KUBEADMCONFIGTEMPLATES, body["metadata"]["name"], namespace)
        if not b.has_unregistered_taint(existing):
            raise ApiError(
                f"tainting bootstrap template {namespace}/{name}: "
                f"{body['metadata']['name']} exists without the {b.TAINT_TEXT} taint"
            )
        return existing

    def _info(self, md: Object) -> MachineDeploymentInfo:
        ref = b.bootstrap_ref(md)
        cluster = self._cache.cluster_object()
        listed = self._cache.machines.store.by_index(BY_DEPLOYMENT, c.name(md))
        return MachineDeploymentInfo(
            ref=_ref(md),
            managed=b.managed(md),
            topology_owned=b.topology_owned(md),
            deleting=c.being_deleted(md),
            paused=cluster is None
            or c.cluster_paused(cluster)
            or c.PAUSED_ANNOTATION in c.annotations_of(md),
            rolling_out=c.condition_true(md, c.ROLLING_OUT_CONDITION),
            replicas=c.replicas(md),
            machines=max(int(md.get("status", {}).get("replicas") or 0), len(listed)),
            registration_taint=_registration_taint(self._cache, md),
            bootstrap_template=str(ref.get("name", "")),
            event_target=md,
        )


def _registration_taint(cache: ManagementCache, md: Object) -> RegistrationTaint:
    ref = b.bootstrap_ref(md)
    if ref.get("kind") != b.BOOTSTRAP_KIND:
        return RegistrationTaint.OTHER_BOOTSTRAP
    template = b.bootstrap_template(cache, ref, c.namespace(md))
    if template is None:
        return RegistrationTaint.NO_TEMPLATE
    return RegistrationTaint.PRESENT if b.has_unregistered_taint(template) else RegistrationTaint.MISSING


def _ref(md: Object) -> MachineDeploymentRef:
    return MachineDeploymentRef(c.namespace(md), c.name(md))
