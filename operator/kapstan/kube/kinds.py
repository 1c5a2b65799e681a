"""Where the workload cluster's kinds live in the API (the CAPI kinds are in ``kapstan.capi.contract``)."""

from __future__ import annotations

from kapstan.kube.client import Resource

PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = Resource("", "v1", "events", "Event")
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet")
PDBS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
NODEPOOLS = Resource("karpenter.sh", "v1", "nodepools", "NodePool", namespaced=False)
NODECLAIMS = Resource("karpenter.sh", "v1", "nodeclaims", "NodeClaim", namespaced=False)
NODECLASSES = Resource(
    "karpenter.cluster.x-k8s.io", "v1alpha1", "clusterapinodeclasses", "ClusterAPINodeClass", namespaced=False
)
