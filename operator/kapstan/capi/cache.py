"""The informers of the management side, for one Cluster: what the provider reads instead of the API.

The Cluster's MDs and Machines (selected by the ``cluster-name`` label CAPI puts on both), and the Clusters,
ClusterClasses and KubeadmConfigTemplates of its namespace. They live here, beside the provider, because
the provider is the only code that reads CAPI objects (docs/architecture.md#one-seam-to-capi): the
controllers ask it which Machine a NodeClaim has, and it answers from these stores with no API call. The
catalog reads the same stores through ``ClusterState.gather`` (it parses MDs and ClusterClasses into
flavors; it does not interpret them as CAPI state).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kapstan.api.wellknown import NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError
from kapstan.kube.informer import Informer
from kapstan.kube.refcache import TemplateCache
from kapstan.kube.store import Indexer, field_indexer, label_indexer

BY_PROVIDER_ID = "providerID"
BY_NODECLAIM = "nodeclaim"
BY_DEPLOYMENT = "deployment"


def annotation_indexer(annotation: str) -> Indexer:
    def values(obj: Object) -> Iterable[str]:
        value = c.annotations_of(obj).get(annotation)
        return [value] if value else []

    return values


class ManagementCache:
    """One informer per CAPI kind kapstan reads, scoped to the Cluster ``namespace/cluster``."""

    def __init__(
        self, client: Client, namespace: str | None, cluster: str, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        """``namespace`` None watches every namespace (tests that make one Cluster per namespace)."""
        self.namespace = namespace
        self.cluster = cluster
        mine = f"{c.CLUSTER_NAME_LABEL}={cluster}"

        def informer(resource: Resource, **kwargs: Any) -> Informer:
            # The same clock as the workload informers' for the reconnect backoff.
            return Informer(client, resource, namespace=namespace, clock=clock, **kwargs)

        self.machine_deployments = informer(c.MACHINEDEPLOYMENTS, label_selector=mine)
        self.machines = informer(
            c.MACHINES,
            label_selector=mine,
            indexers={
                BY_PROVIDER_ID: field_indexer("spec", "providerID"),
                BY_NODECLAIM: annotation_indexer(NODECLAIM_ANNOTATION),
                BY_DEPLOYMENT: label_indexer(c.DEPLOYMENT_NAME_LABEL),
            },
        )
        self.clusters = informer(c.CLUSTERS)
        self.cluster_classes = informer(c.CLUSTERCLASSES)
        self.bootstrap_templates = informer(c.KUBEADMCONFIGTEMPLATES)
        self.templates = TemplateCache(client, clock=clock)
        """Infrastructure machine templates, bootstrap configs and infrastructure machines by reference."""

    @property
    def informers(self) -> list[Informer]:
        return [
            self.machine_deployments,
            self.machines,
            self.clusters,
            self.cluster_classes,
            self.bootstrap_templates,
        ]

    def cluster_object(self) -> Object | None:
        return self.clusters.store.get_by_name(self.cluster, self.namespace)

    def infrastructure_template_refs(self) -> set[tuple[str, str, str, str]]:
        """(API group, kind, namespace, name) of every infrastructure machine template the MDs and the
        ClusterClasses' worker classes point at: the templates the catalog reads capacity from."""
        refs: set[tuple[str, str, str, str]] = set()
        for md in self.machine_deployments.store.objects():
            ref = md.get("spec", {}).get("template", {}).get("spec", {}).get("infrastructureRef") or {}
            if ref.get("kind") and ref.get("name"):
                refs.add((ref.get("apiGroup", ""), ref["kind"], c.namespace(md), ref["name"]))
        for cluster_class in self.cluster_classes.store.objects():
            workers = cluster_class.get("spec", {}).get("workers", {}).get("machineDeployments") or []
            for worker in workers:
                ref = worker.get("infrastructure", {}).get("templateRef") or {}
                if ref.get("kind") and ref.get("name"):
                    group = str(ref.get("apiVersion", "")).rpartition("/")[0]
                    refs.add((group, ref["kind"], c.namespace(cluster_class), ref["name"]))
        return refs


async def read_cluster(client: Client, namespace: str, name: str) -> Object | None:
    """The Cluster as the API server has it now, None when it does not exist (``kapstan run``'s check)."""
    try:
        return await client.get(c.CLUSTERS, name, namespace)
    except ApiError as error:
        if error.not_found:
            return None
        raise
