"""One reconcile per Cluster: install kapstan where the ``kapstanAutoscaling`` variable is on, remove it where
it was on and no longer is.

Enabled, in order (each step idempotent, written with server-side apply under one field manager, so a
retry after a crash redoes nothing twice):

1. The credential: ``rbac.management_rbac`` (ServiceAccount, Role, RoleBinding, token Secret) in the
   Cluster's namespace, with the infrastructure group read from its ClusterClass. The token controller
   fills the token Secret in; until it has, the reconcile comes back a second later.
2. The bundle: ``bundle.workload_install`` for the Cluster's variable value, as ConfigMaps, the
   kubeconfig built from the token as a ``resource-set`` Secret, and a ClusterResourceSet (Reconcile).
3. The label ``kapstan.io/autoscaler=<cluster>`` on the Cluster, last: the CRS selects the Cluster only
   once everything it names exists.

Every object the addon creates is owned by the Cluster (ownerReferences), so deleting the Cluster deletes
them through the garbage collector without the addon.

Disabled while the label is still there (the label is what says "kapstan was installed here"):

1. Delete the ClusterResourceSet and wait until it is gone (CAPI holds it with a finalizer), so nothing
   re-applies what the next step removes.
2. Remove the workload-side install through CAPI's ``<cluster>-kubeconfig``: the default NodePool and
   NodeClass, the ClusterRole and its binding, and kapstan's namespace (Deployment, ServiceAccount, Lease
   Role, credential Secret). The NodePool is deleted with ``propagationPolicy=Orphan``: its NodeClaims,
   Machines and Nodes stay, since turning autoscaling off stops scaling rather than removing capacity.
   The CRDs stay, as ``kubectl``/Helm leave CRDs: deleting them would delete
   every NodePool and NodeClaim users wrote.
3. Delete the credential (deleting the token Secret revokes the token) and the bundle's objects.
4. Remove the label, last, so a failure anywhere above is retried.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kapstan.api.wellknown import AUTOSCALER_LABEL, OWNER_CLUSTER_LABEL
from kapstan.capi import contract as c
from kapstan.install import bundle, rbac
from kapstan.install.clusterclass import Settings, instance_types, settings
from kapstan.install.deployment import DEFAULT_IMAGE
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.controller import Controller, Result
from kapstan.kube.errors import ApiError
from kapstan.kube.informer import Informer
from kapstan.kube.kinds import NAMESPACES, NODECLASSES, NODEPOOLS

log = logging.getLogger(__name__)

FIELD_MANAGER = "kapstan-addon"
TOKEN_WAIT = 1.0  # seconds until the token controller has usually filled the token Secret in
CRS_WAIT = 1.0  # seconds; CAPI removes a deleted ClusterResourceSet's finalizer within a reconcile
RESYNC = 600.0  # seconds; an enabled Cluster is looked at again, so a deleted CRS or credential comes back

SECRETS = Resource("", "v1", "secrets", "Secret")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CLUSTERROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTERROLEBINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)
CLUSTERRESOURCESETS = Resource(
    "addons.cluster.x-k8s.io", "v1beta2", "clusterresourcesets", "ClusterResourceSet"
)
_MANAGEMENT_KINDS = {
    r.kind: r for r in (SECRETS, CONFIGMAPS, SERVICEACCOUNTS, ROLES, ROLEBINDINGS, CLUSTERRESOURCESETS)
}


@dataclass(frozen=True)
class AddonOptions:
    management_server: str
    """This API server as workload clusters reach it; it goes into every delivered kubeconfig."""
    image: str = DEFAULT_IMAGE
    namespace: str = rbac.DEFAULT_NAMESPACE
    """kapstan's namespace in the workload clusters."""
    replicas: int = 2
    ca_data: str = ""
    """The CA (base64 PEM) workload clusters should trust for ``management_server``; default: the cluster's
    own root CA, from the token Secret. Set it when the server is reached through an endpoint (a load
    balancer, a proxy) that presents a certificate of another CA."""


class Addon:
    """The Cluster informer and the controller reconciling each Cluster; ``run()`` until cancelled."""

    def __init__(self, client: Client, options: AddonOptions) -> None:
        self.client = client
        self.options = options
        self.clusters = Informer(client, c.CLUSTERS)
        self.controller = Controller("addon", self.reconcile)
        self.clusters.add_handler(self.controller.enqueue)

    async def run(self) -> None:
        informer = asyncio.ensure_future(self.clusters.run())
        try:
            await self.clusters.wait_synced()
            await self.controller.run()
        finally:
            informer.cancel()
            await asyncio.gather(informer, return_exceptions=True)

    async def reconcile(self, key: str) -> Result:
        cluster = self.clusters.store.get(key)
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return Result()  # ownerReferences take the management objects with the Cluster
        wanted = settings(cluster)
        if wanted.enabled and cluster.get("spec", {}).get("topology"):
            return await self.enable(cluster, wanted)
        if AUTOSCALER_LABEL in (cluster["metadata"].get("labels") or {}):
            return await self.disable(cluster)
        return Result()

    # -- on --------------------------------------------------------------------------------------------

    async def enable(self, cluster: Object, wanted: Settings) -> Result:
        meta = cluster["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        cluster_class = await self._cluster_class(cluster)
        owned = self._owned(cluster)
        for manifest in rbac.management_rbac(
            namespace, name, infrastructure_group=_infrastructure_group(cluster_class)
        ):
            await self._apply(owned(manifest))
        token = await self.client.get(SECRETS, f"{rbac.management_name(name)}-token", namespace)
        data = token.get("data") or {}
        if not data.get("token") or not data.get("ca.crt"):
            return Result(requeue_after=TOKEN_WAIT)
        kubeconfig = bundle.management_kubeconfig(
            self.options.management_server,
            # ca.crt is PEM; a kubeconfig wants it base64-encoded, which is what the Secret holds.
            self.options.ca_data or data["ca.crt"],
            base64.b64decode(data["token"]).decode(),
            name,
        )
        classes = list(wanted.worker_classes)
        groups = bundle.workload_install(
            namespace,
            name,
            wanted,
            instance_types(cluster_class, classes),
            namespace=self.options.namespace,
            image=self.options.image,
            replicas=self.options.replicas,
        )
        for manifest in bundle.bundle(namespace, name, groups, kubeconfig, namespace=self.options.namespace):
            await self._apply(owned(manifest))
        if (meta.get("labels") or {}).get(AUTOSCALER_LABEL) != name:
            patch = {"metadata": {"labels": {AUTOSCALER_LABEL: name}}}
            await self.client.patch(c.CLUSTERS, name, patch, namespace=namespace)
            log.info("kapstan enabled for Cluster %s/%s", namespace, name)
        # Cluster events do not cover a deleted bundle object or a changed ClusterClass; a periodic look
        # does, and costs a handful of no-op applies.
        return Result(requeue_after=RESYNC)

    async def _cluster_class(self, cluster: Object) -> Object:
        ref = cluster["spec"]["topology"].get("classRef") or {}
        namespace = ref.get("namespace") or cluster["metadata"]["namespace"]
        return await self.client.get(c.CLUSTERCLASSES, ref["name"], namespace)

    def _owned(self, cluster: Object) -> Callable[[Object], Object]:
        """Stamp a manifest as the Cluster's: garbage-collected with it, and findable by label."""
        meta = cluster["metadata"]
        owner = {
            "apiVersion": cluster.get("apiVersion", c.CLUSTERS.api_version),
            "kind": "Cluster",
            "name": meta["name"],
            "uid": meta["uid"],
        }

        def owned(manifest: Object) -> Object:
            out = {**manifest, "metadata": {**manifest["metadata"]}}
            out["metadata"]["labels"] = {
                **out["metadata"].get("labels", {}),
                OWNER_CLUSTER_LABEL: meta["name"],
            }
            out["metadata"]["ownerReferences"] = [owner]
            return out

        return owned

    async def _apply(self, manifest: Object) -> Object:
        """Server-side apply: creates or updates, and never fights another manager's fields."""
        resource = _MANAGEMENT_KINDS[manifest["kind"]]
        meta = manifest["metadata"]
        return await self.client.request(
            "PATCH",
            resource,
            namespace=meta.get("namespace"),
            name=meta["name"],
            params={"fieldManager": FIELD_MANAGER, "force": "true"},
            body=manifest,
            content_type="application/apply-patch+yaml",
        )

    # -- off -------------------------------------------------------------------------------------------

    async def disable(self, cluster: Object) -> Result:
        meta = cluster["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        prefix = bundle.bundle_name(name)
        await _absent(self.client.delete(CLUSTERRESOURCESETS, prefix, namespace))
        # The CRS has a finalizer: it is gone only once CAPI's controller has let go of it. Until then it
        # could still apply what the next step deletes.
        try:
            await self.client.get(CLUSTERRESOURCESETS, prefix, namespace)
            return Result(requeue_after=CRS_WAIT)
        except ApiError as error:
            if not error.not_found:
                raise
        await self._remove_workload_install(namespace, name)
        sa = rbac.management_name(name)
        for resource, object_name in (
            (SECRETS, f"{prefix}-credentials"),
            (CONFIGMAPS, f"{prefix}-crds"),
            (CONFIGMAPS, f"{prefix}-install"),
            (CONFIGMAPS, f"{prefix}-nodepool"),
            (SECRETS, f"{sa}-token"),
            (ROLEBINDINGS, sa),
            (ROLES, sa),
            (SERVICEACCOUNTS, sa),
        ):
            await _absent(self.client.delete(resource, object_name, namespace))
        await self.client.patch(
            c.CLUSTERS, name, {"metadata": {"labels": {AUTOSCALER_LABEL: None}}}, namespace=namespace
        )
        log.info("kapstan removed from Cluster %s/%s", namespace, name)
        return Result()

    async def _remove_workload_install(self, namespace: str, name: str) -> None:
        try:
            secret = await self.client.get(SECRETS, f"{name}-kubeconfig", namespace)
        except ApiError as error:
            if error.not_found:  # no workload cluster (yet, or any more): nothing installed there
                log.warning(
                    "Cluster %s/%s has no kubeconfig Secret; skipping workload cleanup", namespace, name
                )
                return
            raise
        kubeconfig = base64.b64decode(secret["data"]["value"]).decode()
        # kr8s reads kubeconfigs from files; the file lives only as long as the connection is made.
        fd, path = tempfile.mkstemp(prefix="kapstan-addon-", suffix=".kubeconfig")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(kubeconfig)
            workload = await Client.connect(path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        # The binding first: it revokes the autoscaler's workload permissions at once, so a replica still
        # shutting down can no longer act. Then the namespace takes the Deployment with it.
        await _absent(workload.delete(CLUSTERROLEBINDINGS, rbac.NAME))
        await _absent(workload.delete(CLUSTERROLES, rbac.NAME))
        await _absent(workload.delete(NAMESPACES, self.options.namespace))
        # Orphan: NodeClaims a NodePool owns would otherwise be deleted with it, i.e. their nodes drained
        # and removed. Turning autoscaling off stops scaling; it does not take capacity away.
        for resource in (NODEPOOLS, NODECLASSES):
            await _absent(
                workload.request(
                    "DELETE",
                    resource,
                    name=bundle.DEFAULT_NODEPOOL,
                    params={"propagationPolicy": "Orphan"},
                )
            )


def _infrastructure_group(cluster_class: Object) -> str:
    """The infrastructure provider's API group, from the ClusterClass's worker templates."""
    for worker in cluster_class.get("spec", {}).get("workers", {}).get("machineDeployments", []):
        ref = worker.get("infrastructure", {}).get("templateRef", {})
        if ref.get("apiVersion"):
            return str(ref["apiVersion"]).split("/")[0]
    return rbac.DEFAULT_INFRASTRUCTURE_GROUP


async def _absent(call: Awaitable[Object]) -> None:
    """Await a delete; an object that is already gone is what we wanted."""
    try:
        await call
    except ApiError as error:
        if not error.not_found:
            raise
