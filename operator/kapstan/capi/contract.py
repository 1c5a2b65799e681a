"""Where the Cluster API fields the provider reads and writes live, as names and small accessors.

The provider handles MDs, Machines and Clusters as the API server returns them (plain dicts) rather than
through models: it reads a handful of fields and writes back merge patches, and a model would drop fields it
does not know on the way (docs/architecture.md#paths-not-provider-models, after CAPI's ``internal/contract``).
"""

from __future__ import annotations

from typing import Any

# The CAPI labels, annotations and conditions the provider reads, re-exported: they are defined in
# api/wellknown.py with the rest of kapstan's vocabulary, and read here as ``c.*`` with the paths.
from kapstan.api.wellknown import CLUSTER_NAME_LABEL as CLUSTER_NAME_LABEL
from kapstan.api.wellknown import DELETE_MACHINE_ANNOTATION as DELETE_MACHINE_ANNOTATION
from kapstan.api.wellknown import DEPLOYMENT_NAME_LABEL as DEPLOYMENT_NAME_LABEL
from kapstan.api.wellknown import MAX_SIZE_ANNOTATION as MAX_SIZE_ANNOTATION
from kapstan.api.wellknown import MIN_SIZE_ANNOTATION as MIN_SIZE_ANNOTATION
from kapstan.api.wellknown import PAUSED_ANNOTATION as PAUSED_ANNOTATION
from kapstan.api.wellknown import ROLLING_OUT_CONDITION as ROLLING_OUT_CONDITION
from kapstan.api.wellknown import SKIP_PREFLIGHT_CHECKS_ANNOTATION as SKIP_PREFLIGHT_CHECKS_ANNOTATION
from kapstan.api.wellknown import TOPOLOGY_DEPLOYMENT_LABEL as TOPOLOGY_DEPLOYMENT_LABEL
from kapstan.kube.client import Object, Resource

GROUP, VERSION = "cluster.x-k8s.io", "v1beta2"
MACHINEDEPLOYMENTS = Resource(GROUP, VERSION, "machinedeployments", "MachineDeployment")
MACHINESETS = Resource(GROUP, VERSION, "machinesets", "MachineSet")
MACHINES = Resource(GROUP, VERSION, "machines", "Machine")
CLUSTERS = Resource(GROUP, VERSION, "clusters", "Cluster")
CLUSTERCLASSES = Resource(GROUP, VERSION, "clusterclasses", "ClusterClass")
KUBEADMCONFIGTEMPLATES = Resource(
    "bootstrap.cluster.x-k8s.io", "v1beta2", "kubeadmconfigtemplates", "KubeadmConfigTemplate"
)


def _get(obj: Object, *path: str) -> Any:
    value: Any = obj
    for step in path:
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value


def name(obj: Object) -> str:
    return str(_get(obj, "metadata", "name"))


def namespace(obj: Object) -> str:
    return str(_get(obj, "metadata", "namespace") or "")


def display(obj: Object) -> str:
    return f"{obj.get('kind', 'object')} {namespace(obj)}/{name(obj)}"


def annotations_of(obj: Object) -> dict[str, str]:
    return dict(_get(obj, "metadata", "annotations") or {})


def labels_of(obj: Object) -> dict[str, str]:
    return dict(_get(obj, "metadata", "labels") or {})


def resource_version(obj: Object) -> str:
    return str(_get(obj, "metadata", "resourceVersion") or "")


def being_deleted(obj: Object) -> bool:
    return _get(obj, "metadata", "deletionTimestamp") is not None


def replicas(md: Object) -> int:
    """``spec.replicas``; CAPI's webhook always sets it, so a missing value only shows in hand-made objects."""
    return int(_get(md, "spec", "replicas") or 0)


def cluster_name(md: Object) -> str:
    return str(_get(md, "spec", "clusterName") or "")


def provider_id(machine: Object) -> str:
    return str(_get(machine, "spec", "providerID") or "")


def cluster_paused(cluster: Object) -> bool:
    return bool(_get(cluster, "spec", "paused")) or PAUSED_ANNOTATION in annotations_of(cluster)


def topology_entries(cluster: Object) -> list[dict[str, Any]]:
    """``spec.topology.workers.machineDeployments``: the Cluster's worker pools, empty without a topology."""
    return list(_get(cluster, "spec", "topology", "workers", "machineDeployments") or [])


def condition_true(obj: Object, kind: str) -> bool:
    """Whether v1beta2 ``status.conditions`` holds ``kind`` with status True."""
    conditions = _get(obj, "status", "conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def on_delete(md: Object) -> bool:
    """The MD's rollout strategy (v1beta2 ``spec.rollout.strategy``) is ``OnDelete``: outdated Machines
    go only when they are deleted."""
    return bool(_get(md, "spec", "rollout", "strategy", "type") == "OnDelete")


def size_bound(md: Object, annotation: str) -> int | None:
    """The min- or max-size annotation as an int, None when absent or not a number."""
    value = annotations_of(md).get(annotation, "").strip()
    return int(value) if value.isdigit() else None


INFRASTRUCTURE_READY_CONDITION = "InfrastructureReady"
INFRASTRUCTURE_DELETED_REASON = "Deleted"
"""v1beta2's reason for ``InfrastructureReady=False`` when the infrastructure machine of a Machine that is
not being deleted went away after it was provisioned: nothing brings it back."""


def machine_failure(machine: Object) -> str:
    """Why the Machine will never become a node, empty while it still may: phase ``Failed``, the terminal
    ``failureReason``/``failureMessage`` v1beta2 keeps under ``status.deprecated.v1beta1`` (set when the
    infrastructure provider reports a failure), or v1beta2's ``InfrastructureReady=False`` for an
    infrastructure machine that was deleted under a Machine nobody is deleting. The other reasons
    (``NotReady``, ``DoesNotExist`` while it is being created) are states a Machine still leaves."""
    legacy = _get(machine, "status", "deprecated", "v1beta1") or {}
    reason = str(legacy.get("failureReason") or "")
    message = str(legacy.get("failureMessage") or "")
    if reason or message:
        return ": ".join(part for part in (reason, message) if part)
    if _get(machine, "status", "phase") == "Failed":
        return "phase Failed"
    conditions = _get(machine, "status", "conditions") or []
    infrastructure: dict[str, Any] = next(
        (c for c in conditions if c.get("type") == INFRASTRUCTURE_READY_CONDITION), {}
    )
    gone = (infrastructure.get("status"), infrastructure.get("reason")) == (
        "False",
        INFRASTRUCTURE_DELETED_REASON,
    )
    if gone and not _get(machine, "metadata", "deletionTimestamp"):
        return f"InfrastructureReady False ({INFRASTRUCTURE_DELETED_REASON}): {infrastructure.get('message', '')}"
    return ""


SCALING_UP_CONDITION = "ScalingUp"


def scale_up_blocked(md: Object) -> str:
    """What blocks the MD from creating Machines, from its v1beta2 ``ScalingUp`` condition (CAPI says
    "Scaling up from 0 to 1 replicas is blocked because TestMachineTemplate does not exist" when a template
    is missing; failed MachineSet preflight checks show on the MachineSet's condition only, not here:
    ``creation_held``); empty when nothing does."""
    for condition in _get(md, "status", "conditions") or []:
        message = str(condition.get("message") or "")
        if condition.get("type") == SCALING_UP_CONDITION and "blocked because" in message:
            return message
    return ""


PREFLIGHT_FAILED = "preflight check failed"
"""How CAPI v1.14 ends each failed check in a MachineSet's ``ScalingUp`` message: ``KubeadmControlPlane
ns/cp is upgrading ("ControlPlaneIsStable" preflight check failed)``."""


def creation_held(machine_set: Object) -> str:
    """Why the MachineSet's preflight checks hold its Machine creation now, empty when they do not.

    CAPI v1.14 runs them before each scale-up (feature gate ``MachineSetPreflightChecks``, on by default):
    while the control plane provisions or upgrades, or the MachineSet's version is skewed from the control
    plane's, it creates no Machine, asks again every 15 s, and says so in the MachineSet's v1beta2
    ``ScalingUp`` condition, True, "Scaling up from 0 to 1 replicas is blocked because:" and one line per
    failed check. The MD's own conditions do not carry it. A condition written before the MachineSet saw
    its current spec (``observedGeneration``) is about another scale-up and is not taken."""
    for condition in _get(machine_set, "status", "conditions") or []:
        if condition.get("type") != SCALING_UP_CONDITION or condition.get("status") != "True":
            continue
        current = condition.get("observedGeneration") == _get(machine_set, "metadata", "generation")
        message = str(condition.get("message") or "")
        if current and PREFLIGHT_FAILED in message:
            return " ".join(message.split())
    return ""
