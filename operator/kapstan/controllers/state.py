"""The operator's picture of both clusters: one informer per kind, and the snapshot built from them.

Workload side: pods, nodes, DaemonSets, namespaces, PDBs and the Karpenter kinds. Management side: the
informers of ``capi.cache`` (the Cluster's MDs and Machines, the Clusters, ClusterClasses and
KubeadmConfigTemplates of its namespace), which the CAPI provider answers the controllers' questions from
(docs/architecture.md#one-seam-to-capi); the catalog reads them here only to parse flavors. Infrastructure
machine templates are read on demand through a TTL cache instead (``kube/refcache.py``).

``simulation_input()`` keeps the catalog (what launching a NodeClaim needs) between calls and builds it
again only when an object it is made of changed (``memo``), so a launch and its retries do not rebuild it.

``gather()`` turns the stores into the same ``Manifests`` that ``kapstan simulate`` reads from files, so
the live operator and the simulator build their snapshots with one piece of code. An object that does not
parse is left out and reported, not fatal: one bad MD must not stop provisioning from the others.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field

from kapstan.api.errors import ManifestError
from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND, NodePool
from kapstan.api.manifests import Manifests
from kapstan.api.wellknown import NODEPOOL
from kapstan.capi.cache import ManagementCache
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.capi.provider import CloudProvider
from kapstan.catalog import FlavorSource
from kapstan.controllers.cluster import Cluster

# Re-exported (``X as X``): modules that import the index names from here keep working.
from kapstan.controllers.indexes import BY_NODEPOOL as BY_NODEPOOL
from kapstan.controllers.indexes import DAEMONSET_TARGET as DAEMONSET_TARGET
from kapstan.controllers.indexes import NODE_NAME as NODE_NAME
from kapstan.controllers.indexes import PROVIDER_ID as PROVIDER_ID
from kapstan.controllers.memo import StoreMemo
from kapstan.controllers.nominations import Nominations
from kapstan.controllers.offerings import OfferingBackoff
from kapstan.controllers.parsed import ParsedObjects
from kapstan.kube.client import CONFIGMAPS, Client, Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.informer import Informer
from kapstan.kube.kinds import (
    DAEMONSETS,
    NAMESPACES,
    NODECLAIMS,
    NODECLASSES,
    NODEPOOLS,
    NODES,
    PDBS,
    PODS,
)
from kapstan.kube.meta import Meta
from kapstan.kube.refcache import TEMPLATE_TTL as TEMPLATE_TTL
from kapstan.kube.refcache import TemplateCache
from kapstan.kube.store import field_indexer, label_indexer
from kapstan.snapshot import SimulationInput, build_simulation_input


@dataclass(frozen=True)
class ClusterRef:
    """The Cluster kapstan scales, ``--cluster NAMESPACE/NAME``."""

    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> ClusterRef:
        namespace, _, name = text.partition("/")
        if not namespace or not name or "/" in name:
            raise ValueError(f"--cluster must be NAMESPACE/NAME, got {text!r}")
        return cls(namespace, name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Problem:
    """An object left out of the snapshot, and why."""

    obj: Object
    error: ManifestError


@dataclass
class Gathered:
    manifests: Manifests
    problems: list[Problem] = field(default_factory=list)
    skipped_sources: list[tuple[FlavorSource, ManifestError]] = field(default_factory=list)

    def keep_plannable_pools(self) -> list[NodePool]:
        """Leave out the NodePools whose ClusterAPINodeClass does not exist (their status says why): no
        node can be planned or launched from them, and one such pool must not stop the others (building
        the catalog fails on a pool whose NodeClass is missing). Returns the pools kept."""
        classes = {nc.name for nc in self.manifests.node_classes}
        kept = [
            pool
            for pool in self.manifests.node_pools
            if (ref := pool.spec.template.spec.node_class_ref).name in classes
            and (ref.group, ref.kind) == (NODECLASS_GROUP, NODECLASS_KIND)
        ]
        self.manifests.node_pools = kept
        return kept


DEFAULT_SCHEDULER = "default-scheduler"

PARSED_BETWEEN_YIELDS = 100
"""Objects ``gather`` parses before it lets the event loop run other tasks (about 20 ms of parsing)."""


def provisionable(pod: Object) -> bool:
    """A pod kapstan should find room for: the scheduler tried and found none (Karpenter's test too)."""
    if not _unbound_workload(pod):
        return False
    conditions = pod.get("status", {}).get("conditions") or []
    return any(
        cond.get("type") == "PodScheduled"
        and cond.get("status") == "False"
        and cond.get("reason") == "Unschedulable"
        for cond in conditions
    )


def awaiting_scheduler(pod: Object) -> bool:
    """A new pod kube-scheduler has not tried yet: no PodScheduled condition, no scheduling gate, the default
    scheduler's. The provisioner plans these with the provisionable ones, as they come: one that fits the
    room nodes have is planned there and opens nothing, and the others are the ones the scheduler is about
    to find no room for. On a busy scheduler that reaches new pods a few per second (kube-scheduler writes a
    failed pod's status before it tries the next, unless its SchedulerAsyncAPICalls gate is on), waiting for its verdict would cut 1,000 pods created in 10 s
    into batches of a few dozen, each bought apart (issue 14)."""
    spec = pod.get("spec", {})
    if not _unbound_workload(pod) or spec.get("schedulingGates"):
        return False
    if spec.get("schedulerName", DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
        return False
    status = pod.get("status", {})
    conditions = status.get("conditions") or []
    return status.get("phase", "Pending") == "Pending" and not any(
        cond.get("type") == "PodScheduled" for cond in conditions
    )


def _unbound_workload(pod: Object) -> bool:
    """Not bound, not deleting, not a DaemonSet's or a static pod (those come with their node)."""
    meta = Meta.of(pod)
    return not (pod.get("spec", {}).get("nodeName") or meta.deleting or meta.owned_by("DaemonSet", "Node"))


def daemonset_target(pod: Object) -> list[str]:
    """The node a DaemonSet's pod is made for: the ``metadata.name`` its required node affinity names."""
    if not Meta.of(pod).owned_by("DaemonSet"):
        return []
    affinity = pod.get("spec", {}).get("affinity", {}).get("nodeAffinity", {})
    terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms") or []
    return [
        name
        for term in terms
        for field in term.get("matchFields") or []
        if field.get("key") == "metadata.name" and field.get("operator") == "In"
        for name in field.get("values") or []
    ]


def _finished(pod: Object) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


class ClusterState:
    def __init__(
        self,
        workload: Client,
        management: Client,
        cluster: ClusterRef,
        *,
        clock: Clock = SYSTEM_CLOCK,
        provider: CloudProvider | None = None,
    ) -> None:
        """``provider``: the CAPI provider the view reads Machines from; by default the MachineDeployment
        provider on ``management`` and this state's management informers (a test passes a fake)."""
        self.workload = workload
        self.management = management
        self.cluster = cluster
        # One clock for the informers' reconnect backoff too, the one every controller reads.
        informer = functools.partial(Informer, clock=clock)
        self.nominations = Nominations(clock)
        self.backoff = OfferingBackoff(clock)
        """Offerings unavailable after failed launches, kept out of every plan until their window ends."""
        self.pods = informer(
            workload,
            PODS,
            indexers={NODE_NAME: field_indexer("spec", "nodeName"), DAEMONSET_TARGET: daemonset_target},
        )
        self.nodes = informer(workload, NODES, indexers={PROVIDER_ID: field_indexer("spec", "providerID")})
        self.daemonsets = informer(workload, DAEMONSETS)
        self.namespaces = informer(workload, NAMESPACES)
        self.pdbs = informer(workload, PDBS)
        self.node_pools = informer(workload, NODEPOOLS)
        self.node_claims = informer(
            workload,
            NODECLAIMS,
            indexers={
                PROVIDER_ID: field_indexer("status", "providerID"),
                NODE_NAME: field_indexer("status", "nodeName"),
                BY_NODEPOOL: label_indexer(NODEPOOL),
            },
        )
        self.node_classes = informer(workload, NODECLASSES)
        self.capi = ManagementCache(management, cluster.namespace, cluster.name, clock=clock)
        """The management side's informers; Machines are read through the provider, which is given these."""
        # The catalog's sources, which ``gather`` parses into flavors; Machines are the provider's alone.
        self.machine_deployments = self.capi.machine_deployments
        self.clusters = self.capi.clusters
        self.cluster_classes = self.capi.cluster_classes
        self.bootstrap_templates = self.capi.bootstrap_templates
        self.templates = self.capi.templates
        self.config_maps = TemplateCache(workload, clock=clock)
        self.catalog = StoreMemo[SimulationInput](self.catalog_informers, self.unwatched_versions)
        """The catalog ``simulation_input`` keeps between launches."""
        self.provider: CloudProvider = provider or MachineDeploymentProvider(management, self.capi)
        """Every CAPI read and write goes through it (docs/architecture.md#one-seam-to-capi)."""
        self.parsed = ParsedObjects()
        """The models ``gather`` parsed, reused while their objects are unchanged (``controllers/parsed.py``)."""
        self.view = Cluster(self, self.provider)
        """The typed view of the nodes (``controllers/cluster.py``) every controller reads."""

    @property
    def informers(self) -> list[Informer]:
        return [
            self.pods,
            self.nodes,
            self.daemonsets,
            self.namespaces,
            self.pdbs,
            self.node_pools,
            self.node_claims,
            self.node_classes,
            *self.capi.informers,
        ]

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers)

    async def run(self) -> None:
        await asyncio.gather(*(informer.run() for informer in self.informers))

    async def wait_synced(self) -> None:
        await asyncio.gather(*(informer.wait_synced() for informer in self.informers))

    def cluster_object(self) -> Object | None:
        return self.capi.cluster_object()

    @property
    def catalog_informers(self) -> list[Informer]:
        """The kinds ``gather(pods=False)`` reads, the catalog is made of."""
        return [
            self.node_pools,
            self.node_classes,
            self.clusters,
            self.cluster_classes,
            self.bootstrap_templates,
            self.machine_deployments,
        ]

    @property
    def gathered_informers(self) -> list[Informer]:
        """The kinds ``gather()`` reads: the catalog's and the workload's."""
        workload = [self.namespaces, self.nodes, self.daemonsets, self.pdbs, self.node_claims, self.pods]
        return [*workload, *self.catalog_informers]

    async def unwatched_versions(self) -> tuple[tuple[str, str], ...]:
        """What ``gather`` reads through the TTL caches rather than informers, as (object, resourceVersion)."""
        found = await self._infrastructure_templates() + await self._config_maps()
        return tuple((f"{obj.get('kind')} {_key(obj)}", Meta.of(obj).resource_version) for obj in found)

    async def simulation_input(self) -> SimulationInput:
        """The live catalog and the instance types under the NodeClasses, without pods: what launching a
        NodeClaim needs. Flavor sources that cannot be described are left out (the provisioner reports
        them). Kept until an object it is made of changes (``memo``)."""
        return await self.catalog.get(self._build_simulation_input)

    async def _build_simulation_input(self) -> SimulationInput:
        gathered = await self.gather(pods=False)
        gathered.keep_plannable_pools()
        cluster = (self.cluster.namespace, self.cluster.name)
        return build_simulation_input(gathered.manifests, cluster, skip=lambda source, error: None)

    async def gather(self, *, pods: bool = True, awaiting: bool = False) -> Gathered:
        """Everything the snapshot needs, as ``Manifests``; pending pods are the provisionable ones, and
        with ``awaiting`` those the scheduler has not tried yet too (the provisioner's view).

        The stores are read at one instant, then parsed (``parsed``: only what changed since the last
        gather) handing the event loop back every ``PARSED_BETWEEN_YIELDS`` objects, so the Lease's
        renewals and the watches go on while thousands of pods are parsed."""
        config_maps = await self._config_maps()
        templates = await self._infrastructure_templates()
        objects: list[Object] = []
        if pods:
            self.parsed.next_round()
            objects += self.namespaces.store.objects()
            objects += self.nodes.store.objects()
            objects += self.daemonsets.store.objects()
            objects += self.pdbs.store.objects()
            # Deleting claims too: the snapshot counts their nodes out and reschedules their pods.
            objects += self.node_claims.store.objects()
            objects += (
                pod
                for pod in self.pods.store.objects()
                if not _finished(pod)
                and (
                    pod.get("spec", {}).get("nodeName")
                    or provisionable(pod)
                    or (awaiting and awaiting_scheduler(pod))
                )
            )
        objects += self.node_pools.store.objects()
        objects += self.node_classes.store.objects()
        objects += config_maps
        objects += self.clusters.store.objects()
        objects += self.cluster_classes.store.objects()
        objects += self.bootstrap_templates.store.objects()
        objects += templates
        objects += self.machine_deployments.store.objects()
        gathered = Gathered(Manifests(parser=self.parsed.parse))
        for index, obj in enumerate(objects, start=1):
            try:
                gathered.manifests.add(obj, f"{obj.get('kind')} {_key(obj)}")
            except ManifestError as error:
                gathered.problems.append(Problem(obj, error))
            if index % PARSED_BETWEEN_YIELDS == 0:
                await asyncio.sleep(0)
        return gathered

    async def _infrastructure_templates(self) -> list[Object]:
        refs = self.capi.infrastructure_template_refs()
        found = [await self.templates.get(*ref) for ref in sorted(refs)]
        return [template for template in found if template is not None]

    async def _config_maps(self) -> list[Object]:
        found = []
        for node_class in self.node_classes.store.objects():
            ref = node_class.get("spec", {}).get("priceTableRef")
            if isinstance(ref, dict) and ref.get("name"):
                config_map = await self.config_maps.get(
                    CONFIGMAPS.group, CONFIGMAPS.kind, ref.get("namespace", "default"), ref["name"]
                )
                if config_map is not None:
                    found.append(config_map)
        return found


def _key(obj: Object) -> str:
    meta = obj.get("metadata", {})
    return f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
