"""Adding a worker pool to a Cluster's topology, for a managed worker class no entry uses yet.

The catalog offers such a class as a flavor source named after the class (``kapstan.catalog.sources``);
the first launch from it appends ``{class, name}`` to ``Cluster.spec.topology.workers.machineDeployments``
and CAPI's topology controller creates the MD. Replicas stay unset in the entry (the webhook forbids them
next to the autoscaler annotations); the new MD starts at its min size, or 1.
"""

from __future__ import annotations

from kapstan.capi import contract as c
from kapstan.capi.cache import read_cluster
from kapstan.capi.provider import NotFound, Paused
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Client
from kapstan.kube.jsonpatch import as_read, patch_if_unchanged, set_members

WORKERS = ("spec", "topology", "workers")


async def add_entry(client: Client, source: FlavorSource, what: str) -> None:
    """Append the entry for ``source`` unless it is there; a lost race is left to the caller's next look."""
    cluster = await read_cluster(client, source.namespace, source.cluster)
    if cluster is None:
        raise NotFound(f"{what}: Cluster {source.namespace}/{source.cluster} not found")
    if c.cluster_paused(cluster):
        raise Paused(f"{what}: Cluster {source.namespace}/{source.cluster} is paused")
    entries = c.topology_entries(cluster)
    if any(entry.get("name") == source.name for entry in entries):
        return
    entry = {"class": source.worker_class, "name": source.name}
    # The list is replaced whole, so the JSON patch tests it as read (another writer's entry since refuses
    # it); not the Cluster's resourceVersion, which CAPI's status writes move all the time.
    patch = set_members(
        cluster,
        WORKERS,
        {"machineDeployments": [*entries, entry]},
        tested=as_read(cluster, WORKERS, "machineDeployments"),
    )
    await patch_if_unchanged(client, c.CLUSTERS, source.cluster, patch, namespace=source.namespace)
