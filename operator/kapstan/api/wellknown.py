"""Every label, annotation, taint, finalizer and condition name kapstan reads or writes, defined once.

After Karpenter's ``pkg/apis/v1/labels.go``: a controller, the catalog, the installer and the sandbox
import these names from here, so a key is spelled in one place and a reader finds what it means beside
it. The node labels the scheduling model matches on are defined in ``kapstan.scheduling.model``, because
the scheduling package imports nothing from ``api`` (an import-linter contract); they are re-exported here
so that everything outside ``scheduling`` has one place to import vocabulary from.
"""

from __future__ import annotations

from typing import Final

from kapstan.scheduling.model import ARCH as ARCH
from kapstan.scheduling.model import CAPACITY_TYPE as CAPACITY_TYPE
from kapstan.scheduling.model import HOSTNAME as HOSTNAME
from kapstan.scheduling.model import INSTANCE_TYPE as INSTANCE_TYPE
from kapstan.scheduling.model import NODEPOOL as NODEPOOL
from kapstan.scheduling.model import OS as OS
from kapstan.scheduling.model import ZONE as ZONE

# -- Karpenter's labels and annotations (karpenter.sh) ----------------------------------------------------

REGISTERED_LABEL: Final = "karpenter.sh/registered"
"""On a Node: its NodeClaim has registered it (labels and taints synced, unregistered taint removed)."""
INITIALIZED_LABEL: Final = "karpenter.sh/initialized"
"""On a Node: Ready and its start-up taints gone; the NodeClaim is Initialized."""
NODEPOOL_HASH_ANNOTATION: Final = "karpenter.sh/nodepool-hash"
"""On a NodeClaim: the digest of its NodePool's template when it was made, so drift can compare."""
NODEPOOL_HASH_VERSION_ANNOTATION: Final = "karpenter.sh/nodepool-hash-version"
"""On a NodeClaim: which hashing scheme made ``NODEPOOL_HASH_ANNOTATION``; another scheme is not drift."""
NODEPOOL_HASH_VERSION: Final = "v3"
"""The value of ``NODEPOOL_HASH_VERSION_ANNOTATION`` this kapstan writes (Karpenter's current one)."""
DO_NOT_DISRUPT_ANNOTATION: Final = "karpenter.sh/do-not-disrupt"
"""On a pod or Node: never disrupt voluntarily; a pod with it is not evicted until its grace is over."""

# -- Karpenter's taints and finalizer ---------------------------------------------------------------------

UNREGISTERED_TAINT_KEY: Final = "karpenter.sh/unregistered"
"""A node registers with this taint until its NodeClaim has synced it (Karpenter's registration gate)."""
UNREGISTERED_TAINT_EFFECT: Final = "NoExecute"
"""The unregistered taint's effect, as Karpenter and the bootstrap templates write it."""
UNREGISTERED_TAINT_TEXT: Final = f"{UNREGISTERED_TAINT_KEY}:{UNREGISTERED_TAINT_EFFECT}"
"""The unregistered taint as messages name it."""
DISRUPTED_TAINT_KEY: Final = "karpenter.sh/disrupted"
"""Put on a Node that is being disrupted or terminated, so no new pod lands on it."""
DISRUPTED_TAINT_EFFECT: Final = "NoSchedule"
"""The disrupted taint's effect: pods already there stay until the drain evicts them."""


def unregistered_taint() -> dict[str, str]:
    """The unregistered taint as a Node or bootstrap template carries it (a fresh dict: callers add it to
    manifests they go on to change)."""
    return {"key": UNREGISTERED_TAINT_KEY, "effect": UNREGISTERED_TAINT_EFFECT}


def disrupted_taint() -> dict[str, str]:
    """The disrupted taint as kapstan puts it on a Node (a fresh dict, as ``unregistered_taint``)."""
    return {"key": DISRUPTED_TAINT_KEY, "effect": DISRUPTED_TAINT_EFFECT}


TERMINATION_FINALIZER: Final = "karpenter.sh/termination"
"""On a NodeClaim: kapstan drains the Node and deletes exactly its Machine before the claim goes."""

# -- kapstan's own labels and annotations (kapstan.io) ----------------------------------------------------

PRICE_ANNOTATION: Final = "kapstan.io/price-per-hour"
"""On an MD or worker class: what one node of it costs an hour; on a NodeClaim: what its offering costs."""
MANAGED_ANNOTATION: Final = "kapstan.io/managed"
"""On an MD or worker class: ``"true"`` lets kapstan scale it (as ``MEMBER_LABEL`` does)."""
MACHINE_ANNOTATION: Final = "kapstan.io/machine"
"""On a NodeClaim: ``namespace/name`` of the Machine launched for it."""
NODECLAIM_ANNOTATION: Final = "kapstan.io/nodeclaim"
"""On a Machine: the NodeClaim that owns it. An annotation, not a ``node.cluster.x-k8s.io/*`` label,
because those propagate to the Node."""
REVISION_OF_ANNOTATION: Final = "kapstan.io/revision-of"
"""On a KubeadmConfigTemplate kapstan wrote: the template it is a tainted revision of."""
DISRUPTION_COMMAND_ANNOTATION: Final = "kapstan.io/disruption"
"""On a NodeClaim being disrupted: the disruption command it belongs to, so a new leader can finish it."""
DISRUPTION_REPLACEMENT_ANNOTATION: Final = "kapstan.io/disruption-replacement-for"
"""On a replacement NodeClaim: the claims it replaces."""
AUTOSCALER_LABEL: Final = "kapstan.io/autoscaler"
"""On a Cluster: its own name, set by the addon while the variable is on; the CRS selects it."""
OWNER_CLUSTER_LABEL: Final = "kapstan.io/cluster"
"""On every management-side object the addon creates for a Cluster: that Cluster's name."""

# -- Cluster API labels and annotations (cluster.x-k8s.io) ------------------------------------------------

MEMBER_LABEL: Final = "node.cluster.x-k8s.io/karpenter-member"
"""On an MD: kapstan may scale it; karpenter-provider-cluster-api's label, honoured so setups carry over."""
CLUSTER_NAME_LABEL: Final = "cluster.x-k8s.io/cluster-name"
"""On CAPI objects: the Cluster they belong to."""
DEPLOYMENT_NAME_LABEL: Final = "cluster.x-k8s.io/deployment-name"
"""On a Machine (and MachineSet): the MachineDeployment it belongs to."""
TOPOLOGY_DEPLOYMENT_LABEL: Final = "topology.cluster.x-k8s.io/deployment-name"
"""On an MD made from a Cluster's topology: the topology entry's name."""
TOPOLOGY_OWNED_LABEL: Final = "topology.cluster.x-k8s.io/owned"
"""On objects the topology controller manages: written from the ClusterClass, not by hand."""
CLONED_FROM_NAME_ANNOTATION: Final = "cluster.x-k8s.io/cloned-from-name"
"""On an infrastructure machine: the template it was cloned from (drift compares it with the MD's)."""
PAUSED_ANNOTATION: Final = "cluster.x-k8s.io/paused"
"""On a CAPI object: its controllers leave it alone, so kapstan does not scale it either."""
DELETE_MACHINE_ANNOTATION: Final = "cluster.x-k8s.io/delete-machine"
"""On a Machine: the MachineSet removes this one first when replicas go down."""
MIN_SIZE_ANNOTATION: Final = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
"""On an MD: the fewest replicas an autoscaler may leave it at."""
MAX_SIZE_ANNOTATION: Final = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
"""On an MD: the most replicas an autoscaler may scale it to."""
SKIP_PREFLIGHT_CHECKS_ANNOTATION: Final = "machineset.cluster.x-k8s.io/skip-preflight-checks"
"""On an MD (copied to its MachineSets) or its bootstrap template: the MachineSet preflight checks CAPI
skips before creating Machines, comma-separated (``All``, ``ControlPlaneIsStable``, ...)."""
CAPACITY_ANNOTATION_PREFIX: Final = "capacity.cluster-autoscaler.kubernetes.io/"
"""Cluster-autoscaler's scale-from-zero annotations on an MD or worker class: what one node of it has."""
CAPACITY_CPU_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "cpu"
"""Scale from zero: the node's CPU."""
CAPACITY_MEMORY_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "memory"
"""Scale from zero: the node's memory."""
CAPACITY_EPHEMERAL_DISK_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "ephemeral-disk"
"""Scale from zero: the node's ephemeral storage."""
CAPACITY_MAX_PODS_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "maxPods"
"""Scale from zero: how many pods the node takes."""
CAPACITY_GPU_COUNT_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "gpu-count"
"""Scale from zero: how many GPUs the node has."""
CAPACITY_GPU_TYPE_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "gpu-type"
"""Scale from zero: the extended resource the GPUs are counted as."""
CAPACITY_LABELS_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "labels"
"""Scale from zero: ``key=value,...`` labels the node will carry."""
CAPACITY_TAINTS_ANNOTATION: Final = CAPACITY_ANNOTATION_PREFIX + "taints"
"""Scale from zero: ``key=value:Effect,...`` taints the node will carry."""

# -- Kubernetes labels, annotations and taints ------------------------------------------------------------

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
"""Set by Kubernetes on every namespace, so selectors can pick namespaces by name."""
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
"""On a static pod's mirror: the kubelet owns it, a drain leaves it."""
SERVICE_ACCOUNT_NAME_ANNOTATION: Final = "kubernetes.io/service-account.name"
"""On a token Secret: the ServiceAccount whose token Kubernetes writes into it."""
NOT_READY_TAINT_KEY: Final = "node.kubernetes.io/not-ready"
"""Put on a Node by Kubernetes while it is not Ready."""
UNREACHABLE_TAINT_KEY: Final = "node.kubernetes.io/unreachable"
"""Put on a Node by Kubernetes while its kubelet does not report."""
NETWORK_UNAVAILABLE_TAINT_KEY: Final = "node.kubernetes.io/network-unavailable"
"""Put on a Node by Kubernetes until its network is configured; host-network pods tolerate it."""
UNINITIALIZED_TAINT_KEY: Final = "node.cloudprovider.kubernetes.io/uninitialized"
"""Put on a Node by the kubelet until a cloud controller has initialized it."""
GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
"""On a GPU Node (NVIDIA's feature discovery): the GPU model; set from a bare model name in ``gpu-type``."""
CONTROL_PLANE_TAINT_KEY: Final = "node-role.kubernetes.io/control-plane"
"""On control-plane Nodes; kapstan's own pods tolerate it."""

# -- Condition types --------------------------------------------------------------------------------------

READY: Final = "Ready"
"""On a Node, NodeClaim, NodePool and NodeClass: the object is ready for use."""
LAUNCHED: Final = "Launched"
"""On a NodeClaim: the CAPI provider has claimed a Machine for it."""
REGISTERED: Final = "Registered"
"""On a NodeClaim: its Node joined and was synced."""
INITIALIZED: Final = "Initialized"
"""On a NodeClaim: its Node is Ready and its start-up taints are gone."""
CONSOLIDATABLE: Final = "Consolidatable"
"""On a NodeClaim: ``consolidateAfter`` has passed since its pods last changed."""
REGISTRATION_HEALTHY: Final = "NodeRegistrationHealthy"
"""On a NodePool: its last NodeClaim registered (False after a launch or registration timeout)."""
OFFERINGS_AVAILABLE: Final = "OfferingsAvailable"
"""NodePool condition: False while offerings are backed off after failed launches (``controllers/offerings.py``)."""
NODES_HEALTHY: Final = "NodesHealthy"
"""On a NodePool: False while too many of its Nodes are not Ready, and voluntary disruption is halted
(``controllers/disruption/health.py``)."""
NODECLASS_READY: Final = "NodeClassReady"
"""On a NodePool: the NodeClass it references exists and is Ready."""
VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
"""On a NodePool: kapstan could read it."""
UNREGISTERED_TAINT_CONDITION: Final = "UnregisteredTaint"
"""On a NodeClass: every managed bootstrap template carries the unregistered taint."""
ROLLING_OUT_CONDITION: Final = "RollingOut"
"""On a MachineDeployment (CAPI v1beta2): a rollout is under way."""
