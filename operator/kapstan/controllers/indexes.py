"""The names of the informer stores' indexes (``ClusterState`` defines them, ``cluster`` reads them).

The Machines' indexes are the provider's (``capi/cache.py``): controllers ask it, not the store."""

PROVIDER_ID = "providerID"
"""Nodes by ``spec.providerID``, NodeClaims by ``status.providerID``."""
NODE_NAME = "nodeName"
"""Pods by ``spec.nodeName``, NodeClaims by ``status.nodeName``."""
BY_NODEPOOL = "nodepool"
"""NodeClaims by their NodePool label."""
DAEMONSET_TARGET = "daemonsetTarget"
"""DaemonSet pods by the node they are made for, bound or not (the DaemonSet controller pins each pod to its
node with a required ``matchFields`` term on ``metadata.name``)."""
