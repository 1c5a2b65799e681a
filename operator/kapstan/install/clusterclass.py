"""kapstan's ClusterClass variable and patches: how a platform team turns autoscaling into a per-Cluster switch.

A platform team merges three things into its ClusterClass once (``merge``): the ``kapstanAutoscaling``
variable, one patch per autoscaled worker class, and the flavor annotations on those classes' metadata.
From then on a cluster owner sets ``kapstanAutoscaling: {enabled: true}`` in the Cluster's topology and
the rest follows: the topology controller appends ``karpenter.sh/unregistered:NoExecute`` to the
bootstrap templates of the classes the variable names, and the addon (``kapstan.addon``) installs the
autoscaler through a ClusterResourceSet.

Why it is split this way, given what ClusterClass patches can and cannot do (CAPI v1beta2):

- Patches change templates only, never a worker class's metadata. The flavor annotations (capacity,
  min/max size, price) and the ``kapstan.io/managed`` marker are therefore static on the class; they cost
  nothing while the variable is off, because no autoscaler runs to read them. A topology entry's own
  metadata still overrides them per Cluster (kapstan's catalog merges entry over class).
- ``enabledIf`` sees the Cluster's variables, not which class a definition is being applied to, and a
  definition's selector is a fixed list of class names. So each autoscaled class gets its own patch whose
  ``enabledIf`` asks both "enabled?" and "is this class in ``workerClasses``?" (sprig's ``has``); the
  taint lands on the classes a Cluster autoscales and on no other.
- A JSON patch ``add`` to ``.../taints/-`` fails when ``taints`` is absent, and then the whole topology
  reconcile fails. Autoscaled classes' KubeadmConfigTemplates must declare ``taints`` (``[]`` is fine; for
  a worker, kubeadm treats an empty list and a missing one alike); ``missing_taints_field`` finds those
  that do not.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kapstan.api.wellknown import (
    CAPACITY_CPU_ANNOTATION,
    CAPACITY_LABELS_ANNOTATION,
    CAPACITY_MAX_PODS_ANNOTATION,
    CAPACITY_MEMORY_ANNOTATION,
    INSTANCE_TYPE,
    MANAGED_ANNOTATION,
    MAX_SIZE_ANNOTATION,
    MIN_SIZE_ANNOTATION,
    PRICE_ANNOTATION,
    unregistered_taint,
)

Manifest = dict[str, Any]

VARIABLE = "kapstanAutoscaling"
PATCH_PREFIX = "kapstan-unregistered-taint-"
TAINTS_PATH = "/spec/template/spec/joinConfiguration/nodeRegistration/taints"

CAPI = "cluster.x-k8s.io/v1beta2"
BOOTSTRAP = "bootstrap.cluster.x-k8s.io/v1beta2"

CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")


@dataclass(frozen=True)
class WorkerFlavor:
    """One autoscaled worker class and the flavor its Machines have."""

    worker_class: str
    cpu: str
    memory: str
    instance_type: str = ""  # default: the class name
    price_per_hour: str = ""  # default: kapstan's relative cost (docs/architecture.md#price)
    max_pods: str = "110"
    min_size: int = 0
    max_size: int = 10

    def annotations(self) -> dict[str, str]:
        """The class metadata's annotations: cluster-autoscaler's scale-from-zero set plus kapstan's own."""
        out = {
            MANAGED_ANNOTATION: "true",
            CAPACITY_CPU_ANNOTATION: self.cpu,
            CAPACITY_MEMORY_ANNOTATION: self.memory,
            CAPACITY_MAX_PODS_ANNOTATION: self.max_pods,
            CAPACITY_LABELS_ANNOTATION: f"{INSTANCE_TYPE}={self.instance_type or self.worker_class}",
            MIN_SIZE_ANNOTATION: str(self.min_size),
            MAX_SIZE_ANNOTATION: str(self.max_size),
        }
        if self.price_per_hour:
            out[PRICE_ANNOTATION] = self.price_per_hour
        return out


def variable(worker_classes: Sequence[str]) -> Manifest:
    """The ClusterClass variable. Every field has a default, so ``{enabled: true}`` is a complete value and
    a Cluster that never mentions the variable gets ``enabled: false``."""
    quantity = {"x-kubernetes-int-or-string": True, "pattern": r"^[0-9]+(\.[0-9]+)?([mkMGTPE]i?)?$"}
    return {
        "name": VARIABLE,
        "required": False,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "description": "kapstan node autoscaling for this Cluster.",
                "default": {},
                "properties": {
                    "enabled": {
                        "type": "boolean",
                        "default": False,
                        "description": "Install kapstan in the workload cluster and taint the autoscaled "
                        "classes' bootstrap templates with karpenter.sh/unregistered.",
                    },
                    "workerClasses": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(worker_classes)},
                        "uniqueItems": True,
                        "default": list(worker_classes),
                        "description": "The worker classes kapstan may scale (default: all it can).",
                    },
                    "nodePool": {
                        "type": "object",
                        "default": {},
                        "description": "The default NodePool installed with kapstan.",
                        "properties": {
                            "cpuLimit": {
                                **quantity,
                                "default": "64",
                                "description": "spec.limits.cpu: total vCPU of its nodes.",
                            },
                            "memoryLimit": {
                                **quantity,
                                "default": "256Gi",
                                "description": "spec.limits.memory: total memory of its nodes.",
                            },
                            "consolidationPolicy": {
                                "type": "string",
                                "enum": list(CONSOLIDATION_POLICIES),
                                "default": "WhenEmptyOrUnderutilized",
                            },
                            "consolidateAfter": {
                                "type": "string",
                                "pattern": r"^(([0-9]+(s|m|h))+|Never)$",
                                "default": "30s",
                            },
                        },
                    },
                },
            }
        },
    }


def enabled_if(worker_class: str) -> str:
    """The Go template that gates one class's patch: the variable is on and names the class."""
    return f'{{{{ and .{VARIABLE}.enabled (has "{worker_class}" .{VARIABLE}.workerClasses) }}}}'


def patches(worker_classes: Sequence[str]) -> list[Manifest]:
    """One patch per autoscaled class: append the unregistered taint to its KubeadmConfigTemplate."""
    return [
        {
            "name": f"{PATCH_PREFIX}{cls}",
            "description": f"kapstan: Nodes of {cls} register with karpenter.sh/unregistered:NoExecute.",
            "enabledIf": enabled_if(cls),
            "definitions": [
                {
                    "selector": {
                        "apiVersion": BOOTSTRAP,
                        "kind": "KubeadmConfigTemplate",
                        "matchResources": {"machineDeploymentClass": {"names": [cls]}},
                    },
                    "jsonPatches": [{"op": "add", "path": f"{TAINTS_PATH}/-", "value": unregistered_taint()}],
                }
            ],
        }
        for cls in worker_classes
    ]


def merge(cluster_class: Manifest, flavors: Sequence[WorkerFlavor]) -> Manifest:
    """``cluster_class`` with kapstan's variable, patches and class annotations merged in (a copy).

    Idempotent: kapstan's variable and patches replace earlier versions of themselves, other variables,
    patches and annotations are kept. Raises ``ValueError`` for a flavor whose class the ClusterClass
    does not have.
    """
    out = copy.deepcopy(cluster_class)
    spec = out.setdefault("spec", {})
    workers = spec.get("workers", {}).get("machineDeployments", [])
    by_name = {w["class"]: w for w in workers}
    missing = [f.worker_class for f in flavors if f.worker_class not in by_name]
    if missing:
        known = ", ".join(sorted(by_name)) or "none"
        raise ValueError(f"ClusterClass has no worker class {', '.join(missing)} (it has: {known})")
    for flavor in flavors:
        metadata = by_name[flavor.worker_class].setdefault("metadata", {})
        metadata.setdefault("annotations", {}).update(flavor.annotations())
    names = [f.worker_class for f in flavors]
    spec["variables"] = [
        *(v for v in spec.get("variables", []) if v.get("name") != VARIABLE),
        variable(names),
    ]
    spec["patches"] = [
        *(p for p in spec.get("patches", []) if not str(p.get("name", "")).startswith(PATCH_PREFIX)),
        *patches(names),
    ]
    return out


def autoscaled_classes(cluster_class: Manifest) -> list[str]:
    """The worker classes kapstan's patches cover in ``cluster_class``, in ClusterClass order."""
    patched = {
        str(p["name"]).removeprefix(PATCH_PREFIX)
        for p in cluster_class.get("spec", {}).get("patches", [])
        if str(p.get("name", "")).startswith(PATCH_PREFIX)
    }
    workers = cluster_class.get("spec", {}).get("workers", {}).get("machineDeployments", [])
    return [w["class"] for w in workers if w["class"] in patched]


def missing_taints_field(templates: Sequence[Manifest]) -> list[str]:
    """Names of KubeadmConfigTemplates without ``joinConfiguration.nodeRegistration.taints``: the patch
    cannot append to them, and the topology reconcile of every Cluster using them would fail."""
    out = []
    for template in templates:
        if template.get("kind") != "KubeadmConfigTemplate":
            continue
        spec = template.get("spec", {}).get("template", {}).get("spec", {})
        if "taints" not in spec.get("joinConfiguration", {}).get("nodeRegistration", {}):
            out.append(template["metadata"]["name"])
    return out


@dataclass(frozen=True)
class Settings:
    """A Cluster's value of the variable, defaults filled in as the ClusterClass schema fills them."""

    enabled: bool = False
    worker_classes: tuple[str, ...] = ()
    cpu_limit: str = "64"
    memory_limit: str = "256Gi"
    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: str = "30s"
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)


def settings(cluster: Manifest) -> Settings:
    """Read the variable from a Cluster's topology. A Cluster without a topology, or without the variable,
    is not autoscaled. CAPI's webhook has already defaulted the value against the schema; the defaults here
    only matter for objects that bypassed it."""
    topology = cluster.get("spec", {}).get("topology") or {}
    value: Any = next(
        (v.get("value") for v in topology.get("variables", []) if v.get("name") == VARIABLE), None
    )
    if not isinstance(value, dict):
        return Settings()
    pool: dict[str, Any] = value["nodePool"] if isinstance(value.get("nodePool"), dict) else {}
    default = Settings()
    return Settings(
        enabled=value.get("enabled") is True,
        worker_classes=tuple(str(c) for c in value.get("workerClasses") or ()),
        cpu_limit=str(pool.get("cpuLimit", default.cpu_limit)),
        memory_limit=str(pool.get("memoryLimit", default.memory_limit)),
        consolidation_policy=str(pool.get("consolidationPolicy", default.consolidation_policy)),
        consolidate_after=str(pool.get("consolidateAfter", default.consolidate_after)),
        raw=value,
    )


def instance_types(cluster_class: Manifest, worker_classes: Sequence[str]) -> list[str]:
    """The instance types of ``worker_classes``, as the catalog names them from the class annotations
    (the ``node.kubernetes.io/instance-type`` capacity label), else the class name."""
    workers = cluster_class.get("spec", {}).get("workers", {}).get("machineDeployments", [])
    by_name = {w["class"]: w for w in workers}
    out: list[str] = []
    for cls in worker_classes:
        annotations = by_name.get(cls, {}).get("metadata", {}).get("annotations", {})
        labels = dict(
            item.split("=", 1)
            for item in annotations.get(CAPACITY_LABELS_ANNOTATION, "").split(",")
            if "=" in item
        )
        name = labels.get(INSTANCE_TYPE, cls)
        if name not in out:
            out.append(name)
    return out
