"""The three CRDs kapstan serves, generated from Python data: ``karpenter.sh/v1`` NodePool and NodeClaim,
and ``karpenter.cluster.x-k8s.io/v1alpha1`` ClusterAPINodeClass.

Users bring NodePool manifests written for Karpenter, so the schemas accept what Karpenter accepts and
reject, at admission, what Karpenter rejects (operators, weights, budgets, durations, CEL rules), and the
printer columns are the ones ``kubectl get nodepools`` shows under Karpenter.
"""

from __future__ import annotations

from typing import Any

from kapstan.api.wellknown import CAPACITY_TYPE, HOSTNAME, NODEPOOL, READY
from kapstan.install.schema import (
    CONDITIONS,
    Schema,
    array,
    date_time,
    integer,
    obj,
    quantity_map,
    rule,
    string,
    string_map,
)

KARPENTER_GROUP = "karpenter.sh"
NODECLASS_GROUP = "karpenter.cluster.x-k8s.io"

# Karpenter's order; kapstan.scheduling.model.NODE_OPERATORS is the same set (a test checks).
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
DURATION = r"^([0-9]+(s|m|h))+$"
NILLABLE_DURATION = r"^(([0-9]+(s|m|h))+|Never)$"
BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_DURATION = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
CRON = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
QUALIFIED_NAME = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

# -- shared parts -----------------------------------------------------------------------------------

_REQUIREMENT = obj(
    {
        "key": rule(
            rule(
                string("A node label key.", maxLength=316, pattern=QUALIFIED_NAME),
                f'self != "{NODEPOOL}"',
                f'label "{NODEPOOL}" is restricted',
            ),
            f'self != "{HOSTNAME}"',
            f'label "{HOSTNAME}" is restricted',
        ),
        "operator": string("How the key's value relates to values.", enum=OPERATORS),
        "values": array(string(maxLength=63), maxItems=100, **{"x-kubernetes-list-type": "atomic"}),
        "minValues": integer(
            "The least number of distinct values the chosen instance types must cover.", minimum=1, maximum=50
        ),
    },
    required=["key", "operator"],
)

_REQUIREMENTS = rule(
    rule(
        rule(
            array(_REQUIREMENT, "Constraints on the nodes' labels.", maxItems=100),
            "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
            "requirements with operator 'In' must have a value defined",
        ),
        "self.all(x, (x.operator in ['Gt', 'Lt', 'Gte', 'Lte']) ? "
        "(x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",
    ),
    "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",
    "requirements with 'minValues' must have at least that many values specified in the 'values' field",
)

_TAINT = obj(
    {
        "key": string(minLength=1, pattern=QUALIFIED_NAME),
        "value": string(pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"),
        "effect": string(enum=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "timeAdded": date_time(),
    },
    required=["key", "effect"],
)


def _not_empty(schema: Schema, field: str) -> Schema:
    return rule(schema, f"self.{field} != ''", f"{field} may not be empty")


_NODECLASS_REF = _not_empty(
    _not_empty(
        _not_empty(
            obj(
                {
                    "group": string("API group of the node class.", maxLength=253, pattern=DNS_SUBDOMAIN),
                    "kind": string("Kind of the node class.", maxLength=63, pattern=r"^[A-Za-z0-9]+$"),
                    "name": string("Name of the node class.", maxLength=253),
                },
                required=["group", "kind", "name"],
                description="The node class (provider settings) nodes of this pool are made from.",
            ),
            "group",
        ),
        "kind",
    ),
    "name",
)

_NODECLAIM_SPEC_FIELDS: dict[str, Schema] = {
    "requirements": _REQUIREMENTS,
    "taints": array(_TAINT, "Taints the node carries for its whole life."),
    "startupTaints": array(_TAINT, "Taints something else removes once the node is ready."),
    "nodeClassRef": _NODECLASS_REF,
    "expireAfter": string(
        'How long a node may live before it is replaced, or "Never".',
        pattern=NILLABLE_DURATION,
        default="720h",
    ),
    "terminationGracePeriod": string(
        "How long draining may take before pods are deleted regardless of PDBs.", pattern=DURATION
    ),
}


def _restricted_labels(schema: Schema) -> Schema:
    schema = rule(
        schema,
        f'self.all(x, x in ["{CAPACITY_TYPE}", "{NODEPOOL}"] || '
        '!x.find("^([^/]+)").endsWith("karpenter.sh"))',
        'label domain "karpenter.sh" is restricted',
    )
    schema = rule(schema, f'self.all(x, x != "{NODEPOOL}")', f'label "{NODEPOOL}" is restricted')
    return rule(schema, f'self.all(x, x != "{HOSTNAME}")', f'label "{HOSTNAME}" is restricted')


_TEMPLATE = obj(
    {
        "metadata": obj(
            {
                "labels": _restricted_labels(
                    string_map("Labels every node of the pool gets.", maxProperties=100)
                ),
                "annotations": string_map("Annotations every node of the pool gets."),
            }
        ),
        "spec": obj(_NODECLAIM_SPEC_FIELDS, required=["nodeClassRef", "requirements"]),
    },
    required=["spec"],
)

_BUDGET = obj(
    {
        "nodes": string(
            'How many nodes may be disrupted at once: a count ("3") or a percentage ("10%").',
            pattern=BUDGET_NODES,
            default="10%",
        ),
        "schedule": string("A cron schedule for when the budget is active.", pattern=CRON),
        "duration": string("How long the budget is active after each schedule hit.", pattern=BUDGET_DURATION),
        "reasons": array(string(enum=["Underutilized", "Empty", "Drifted"])),
    },
    required=["nodes"],
)

_DISRUPTION = obj(
    {
        "consolidationPolicy": string(
            "Which nodes consolidation may remove.",
            enum=["WhenEmpty", "WhenEmptyOrUnderutilized"],
            default="WhenEmptyOrUnderutilized",
        ),
        "consolidateAfter": string(
            'How long a node must be consolidatable before it is, or "Never".', pattern=NILLABLE_DURATION
        ),
        "budgets": rule(
            array(
                _BUDGET,
                "Limits on how many nodes disruption takes at once.",
                maxItems=50,
                default=[{"nodes": "10%"}],
            ),
            "self.all(x, has(x.schedule) == has(x.duration))",
            "'schedule' must be set with 'duration'",
        ),
    },
    required=["consolidateAfter"],
    default={"consolidateAfter": "0s"},
)

# -- the CRDs ---------------------------------------------------------------------------------------

NODEPOOL_SCHEMA = obj(
    {
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "spec": obj(
            {
                "template": _TEMPLATE,
                "disruption": _DISRUPTION,
                "limits": quantity_map("Caps on the total resources of the pool's nodes."),
                "weight": integer("Priority among pools; higher is tried first.", minimum=1, maximum=100),
            },
            required=["template"],
        ),
        "status": obj(
            {
                "resources": quantity_map("Resources of the pool's nodes, and their count as `nodes`."),
                "nodeClassObservedGeneration": {"type": "integer", "format": "int64"},
                "conditions": CONDITIONS,
            }
        ),
    },
    required=["spec"],
)

NODECLAIM_SCHEMA = obj(
    {
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "spec": rule(
            obj(
                {**_NODECLAIM_SPEC_FIELDS, "resources": obj({"requests": quantity_map()})},
                required=["nodeClassRef", "requirements"],
            ),
            "self == oldSelf",
            "spec is immutable",
        ),
        "status": obj(
            {
                "providerID": string(),
                "imageID": string(),
                "nodeName": string(),
                "capacity": quantity_map(),
                "allocatable": quantity_map(),
                "lastPodEventTime": date_time(),
                "conditions": CONDITIONS,
            }
        ),
    },
    required=["spec"],
)

_RESERVED = quantity_map()

NODECLASS_SCHEMA = obj(
    {
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "spec": obj(
            {
                "kubelet": obj(
                    {
                        "kubeReserved": _RESERVED,
                        "systemReserved": _RESERVED,
                        "evictionHard": string_map(
                            'Signal to threshold, e.g. {"memory.available": "100Mi"}.'
                        ),
                    }
                ),
                "priceTable": {
                    "type": "object",
                    "description": "Flavor name to price per hour; wins over priceTableRef.",
                    # A number or a decimal string; a structural schema cannot say "number or string"
                    # (only int-or-string), so the value is left open and kapstan.api validates it.
                    "additionalProperties": {"x-kubernetes-preserve-unknown-fields": True},
                },
                "priceTableRef": obj(
                    {"name": string(minLength=1), "namespace": string(default="default")},
                    required=["name"],
                    description="A ConfigMap whose data maps flavor name to price per hour.",
                ),
            }
        ),
        "status": obj({"conditions": CONDITIONS}),
    },
)


def _column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


_READY = _column(READY, f'.status.conditions[?(@.type=="{READY}")].status')
_AGE = _column("Age", ".metadata.creationTimestamp", "date")


def crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    schema: Schema,
    columns: list[dict[str, Any]],
    short_names: list[str] | None = None,
) -> dict[str, Any]:
    """A cluster-scoped CRD with one served, stored version and a status subresource."""
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
        "categories": ["karpenter"],
    }
    if short_names:
        names["shortNames"] = short_names
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }


def crds() -> list[dict[str, Any]]:
    """The CRDs in install order."""
    label = r".metadata.labels.{}"
    return [
        crd(
            KARPENTER_GROUP,
            "v1",
            "NodePool",
            "nodepools",
            NODEPOOL_SCHEMA,
            [
                _column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
                _column("Nodes", ".status.resources.nodes"),
                _READY,
                _AGE,
                _column("Weight", ".spec.weight", "integer", priority=1),
                _column("CPU", ".status.resources.cpu", priority=1),
                _column("Memory", ".status.resources.memory", priority=1),
            ],
            ["np", "nps"],
        ),
        crd(
            KARPENTER_GROUP,
            "v1",
            "NodeClaim",
            "nodeclaims",
            NODECLAIM_SCHEMA,
            [
                _column("Type", label.format(r"node\.kubernetes\.io/instance-type")),
                _column("Capacity", label.format(r"karpenter\.sh/capacity-type")),
                _column("Zone", label.format(r"topology\.kubernetes\.io/zone")),
                _column("Node", ".status.nodeName"),
                _READY,
                _AGE,
                _column("ID", ".status.providerID", priority=1),
                _column("NodePool", label.format(r"karpenter\.sh/nodepool"), priority=1),
                _column("NodeClass", ".spec.nodeClassRef.name", priority=1),
            ],
            ["nc", "ncs"],
        ),
        crd(
            NODECLASS_GROUP,
            "v1alpha1",
            "ClusterAPINodeClass",
            "clusterapinodeclasses",
            NODECLASS_SCHEMA,
            [_READY, _AGE],
        ),
    ]
