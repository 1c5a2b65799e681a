"""The permissions ``kapstan run`` needs, on each side, and not one verb more
(docs/architecture.md#the-two-clusters).

Workload side: a ServiceAccount that the Deployment runs as, a ClusterRole for the kinds kapstan reads and
writes across the cluster (pods, nodes, the Karpenter kinds, Events) and a Role for the leader-election
Lease in kapstan's own namespace. Management side: a ServiceAccount whose token becomes the
``--management-kubeconfig`` the operator holds, with a Role (never a ClusterRole) in the Cluster's
namespace: scale its MachineDeployments, annotate its Machines, read its templates and ClusterClass, write
template revisions, its topology workers and Events on its MDs. That credential leaves the management
cluster, so what it cannot do matters more than what it can: it reads no Secrets, deletes nothing, and sees
no other namespace.

The rules follow the API calls in ``kapstan.kube``, ``kapstan.capi`` and ``kapstan.controllers``; a unit test
checks that every kind the operator touches has a rule, and the sandbox tests make each call as the
ServiceAccount, and a few it must not make. ``get`` goes with every ``list`` (except on Clusters, where it
is limited to the one Cluster): it reveals nothing ``list`` does not, and single-object reads stay possible.

API discovery (``/api``, ``/apis/<group>[/<version>]``), which kapstan uses to find an infrastructure
template's plural and a group's preferred version, needs no rule here: Kubernetes grants it to every
authenticated user through the ``system:discovery`` ClusterRoleBinding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kapstan.api.wellknown import SERVICE_ACCOUNT_NAME_ANNOTATION

Manifest = dict[str, Any]

NAME = "kapstan"
DEFAULT_NAMESPACE = "kapstan-system"
DEFAULT_LEASE = "kapstan"  # ``kapstan run --leader-election-id``'s default
DEFAULT_CLUSTER = ("default", "my-cluster")  # a placeholder: render with --cluster NAMESPACE/NAME
DEFAULT_INFRASTRUCTURE_GROUP = "infrastructure.cluster.x-k8s.io"

RBAC = "rbac.authorization.k8s.io"
CAPI = "cluster.x-k8s.io"
BOOTSTRAP = "bootstrap.cluster.x-k8s.io"
KARPENTER = "karpenter.sh"
NODECLASS = "karpenter.cluster.x-k8s.io"

READ = ["get", "list", "watch"]


def rule(
    group: str, resources: Sequence[str], verbs: Sequence[str], names: Sequence[str] = ()
) -> dict[str, Any]:
    """One PolicyRule; ``names`` limits it to those objects (RBAC cannot, for list, watch and create)."""
    out: dict[str, Any] = {"apiGroups": [group], "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    out["verbs"] = list(verbs)
    return out


def workload_rules() -> list[dict[str, Any]]:
    """The ClusterRole's rules: what every controller of ``kapstan run`` does in the workload cluster."""
    return [
        # Informers over pods (pending and bound) and nodes; the provisioner and termination read both.
        rule("", ["pods"], READ),
        # Draining goes through the Eviction API so PDBs are honoured; kapstan never deletes a pod itself.
        rule("", ["pods/eviction"], ["create"]),
        # Registration syncs labels and taints and removes karpenter.sh/unregistered; termination adds
        # karpenter.sh/disrupted. Always merge patches with a resourceVersion, never a PUT, and never a
        # delete: a Node goes away with its Machine (docs/architecture.md#capi-facts).
        rule("", ["nodes"], [*READ, "patch"]),
        # Snapshot inputs: namespaces (for namespace selectors in affinity terms), DaemonSet overhead, PDBs.
        rule("", ["namespaces"], READ),
        rule("apps", ["daemonsets"], READ),
        rule("policy", ["poddisruptionbudgets"], READ),
        # kube.events: create an Event, then bump its count with a patch. Never read back: the recorder
        # remembers its own Events, so list/get would only expose other components' Events.
        rule("", ["events"], ["create", "patch"]),
        # Price tables: a ClusterAPINodeClass's priceTableRef may name a ConfigMap in any namespace, so the
        # grant is cluster-wide, but get only: without list or watch, only a ConfigMap whose name is known
        # can be read. Secrets are a different resource and stay unreadable.
        rule("", ["configmaps"], ["get"]),
        # NodePools are the user's: read them, write only their status (conditions, resources).
        rule(KARPENTER, ["nodepools"], READ),
        rule(KARPENTER, ["nodepools/status"], ["patch"]),
        # NodeClaims are kapstan's: the provisioner creates them, the lifecycle annotates them and deletes
        # those that fail to launch or register, termination removes its finalizer.
        rule(KARPENTER, ["nodeclaims"], [*READ, "create", "patch", "delete"]),
        rule(KARPENTER, ["nodeclaims/status"], ["patch"]),
        # Karpenter v1alpha5 Provisioners and Machines, which kapstan does not serve: listed only to name
        # each one in the log and in an Event on it that points to `kapstan convert` (controllers/unserved.py).
        rule(KARPENTER, ["provisioners", "machines"], ["list"]),
        rule(NODECLASS, ["clusterapinodeclasses"], READ),
        rule(NODECLASS, ["clusterapinodeclasses/status"], ["patch"]),
    ]


def lease_rules(lease: str = DEFAULT_LEASE) -> list[dict[str, Any]]:
    """The Role's rules in the leader-election namespace: kube.leader gets, creates and updates one Lease.

    ``create`` cannot be limited to a name (the object does not exist yet when it is authorized); ``get``
    and ``update`` are limited to kapstan's Lease, so the ServiceAccount cannot take over another
    component's leadership in the same namespace.
    """
    return [
        rule("coordination.k8s.io", ["leases"], ["create"]),
        rule("coordination.k8s.io", ["leases"], ["get", "update"], names=[lease]),
    ]


def management_rules(
    cluster_name: str,
    infrastructure_group: str = DEFAULT_INFRASTRUCTURE_GROUP,
    infrastructure_resources: Sequence[str] = ("*",),
) -> list[dict[str, Any]]:
    """The Role's rules in the Cluster's namespace of the management cluster.

    The namespace is the boundary RBAC can draw: MDs and Machines are selected by the ``cluster-name``
    label, which RBAC cannot express, so kapstan can scale the MDs of every Cluster in that namespace. Only
    the Cluster object itself is limited by name. One Cluster per namespace isolates clusters fully.
    """
    return [
        # The provider reads MDs (informer, and a fresh GET under the per-MD lock) and the template-taints
        # controller points an MD at a new bootstrap template revision.
        rule(CAPI, ["machinedeployments"], [*READ, "patch"]),
        # Replicas change only through the scale subresource, with a JSON patch testing the replicas.
        rule(CAPI, ["machinedeployments/scale"], ["get", "patch"]),
        # Machines are claimed (kapstan.io annotation) and marked cluster.x-k8s.io/delete-machine, never
        # deleted: the MachineSet deletes the marked Machine when replicas drop.
        rule(CAPI, ["machines"], [*READ, "patch"]),
        # A launch whose Machines do not come lists the MD's MachineSets: their ScalingUp condition is
        # the only place CAPI says its preflight checks hold creation (a control-plane upgrade).
        rule(CAPI, ["machinesets"], ["list"]),
        # The Clusters informer lists the namespace; get (pause checks, start-up) and patch (new topology
        # worker entries) are limited to this Cluster.
        rule(CAPI, ["clusters"], ["list", "watch"]),
        rule(CAPI, ["clusters"], ["get", "patch"], names=[cluster_name]),
        rule(CAPI, ["clusterclasses"], READ),
        # Bootstrap templates are read for the unregistered taint; a missing taint means a new revision
        # (templates are immutable by convention), hence create but not update or delete.
        rule(BOOTSTRAP, ["kubeadmconfigtemplates"], [*READ, "create"]),
        # Events about management objects (an MD switched to a tainted template revision, and the rollout
        # that causes) belong next to them, where ``kubectl describe`` finds them; written like the
        # workload side's, create then patch the count.
        rule("", ["events"], ["create", "patch"]),
        # Infrastructure machine templates: each provider has its own kinds (AWSMachineTemplate,
        # OpenStackMachineTemplate...), found at run time from an MD's or worker class's infrastructureRef,
        # and RBAC has no wildcard inside a name ("*machinetemplates"). By default, then, every resource of
        # the provider's group, with get only: kapstan reads templates by the names MDs and ClusterClasses
        # already show it, nothing can be listed or changed, and providers keep credentials in Secrets
        # (core group), not in these objects. Pass the plurals to narrow it to the templates.
        rule(infrastructure_group, infrastructure_resources, ["get"]),
    ]


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": NAME}
    meta.update(extra)
    return meta


def _service_account(name: str, namespace: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)}


def _granted(
    role_kind: str, name: str, namespace: str | None, rules: list[dict[str, Any]], sa: tuple[str, str]
) -> list[Manifest]:
    """A ``role_kind`` (ClusterRole or Role) with ``rules`` and its binding to ServiceAccount ``sa``
    (namespace, name), both named ``name``."""
    role = {"apiVersion": f"{RBAC}/v1", "kind": role_kind, "metadata": _meta(name, namespace), "rules": rules}
    binding = {
        "apiVersion": f"{RBAC}/v1",
        "kind": f"{role_kind}Binding",
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa[1], "namespace": sa[0]}],
    }
    return [role, binding]


def workload_rbac(
    namespace: str = DEFAULT_NAMESPACE, *, name: str = NAME, lease: str = DEFAULT_LEASE
) -> list[Manifest]:
    """kapstan's namespace, its ServiceAccount, the ClusterRole and the Lease Role, each with its binding.

    ``name`` names the ServiceAccount and every role and binding; it is also the ClusterRole's name, so
    two installs in one workload cluster (or two tests sharing an API server) need different names.
    """
    sa = (namespace, name)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)},
        _service_account(name, namespace),
        *_granted("ClusterRole", name, None, workload_rules(), sa),
        *_granted("Role", name, namespace, lease_rules(lease), sa),
    ]


def management_name(cluster_name: str) -> str:
    """The management-side ServiceAccount, Role and binding of one Cluster: ``kapstan-<cluster>``."""
    return f"{NAME}-{cluster_name}"


def management_rbac(
    cluster_namespace: str,
    cluster_name: str,
    *,
    infrastructure_group: str = DEFAULT_INFRASTRUCTURE_GROUP,
    infrastructure_resources: Sequence[str] = ("*",),
) -> list[Manifest]:
    """The credential kapstan holds for Cluster ``cluster_namespace/cluster_name``: a ServiceAccount in the
    Cluster's namespace, its Role and RoleBinding, and a token Secret.

    The token Secret (``kubernetes.io/service-account-token``, filled in by the token controller) is what a
    kubeconfig for ``kapstan run --management-kubeconfig`` is built from. A TokenRequest token would expire,
    and the kubeconfig is copied into the workload cluster once (ClusterResourceSet), so it is the one
    long-lived token in the install; deleting the Secret revokes it.
    """
    name = management_name(cluster_name)
    rules = management_rules(cluster_name, infrastructure_group, infrastructure_resources)
    return [
        _service_account(name, cluster_namespace),
        *_granted("Role", name, cluster_namespace, rules, (cluster_namespace, name)),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": _meta(
                f"{name}-token",
                cluster_namespace,
                annotations={SERVICE_ACCOUNT_NAME_ANNOTATION: name},
            ),
        },
    ]


ADDON_NAME = f"{NAME}-addon"
ADDONS = "addons.cluster.x-k8s.io"


def addon_rules(
    infrastructure_groups: Sequence[str] = (DEFAULT_INFRASTRUCTURE_GROUP,),
) -> list[dict[str, Any]]:
    """The ClusterRole of ``kapstan addon`` in the management cluster, across the namespaces of Clusters.

    It creates each Cluster's management Role, and Kubernetes only lets it grant what it holds itself
    (RBAC's escalation check) unless it has ``escalate``/``bind``, which would let it grant anything. So it
    holds ``management_rules`` cluster-wide (Cluster names cannot be known in advance) and nothing beyond
    what its own reconcile does.
    """
    delegated = [
        {key: value for key, value in r.items() if key != "resourceNames"}
        for r in management_rules("", infrastructure_groups[0])
    ]
    # One get-only rule per further provider group, as management_rules grants for the first.
    delegated += [rule(group, ["*"], ["get"]) for group in infrastructure_groups[1:]]
    write = ["create", "get", "patch", "delete"]
    return [
        # The informer over Clusters, and the label that makes the CRS select one.
        rule(CAPI, ["clusters"], [*READ, "patch"]),
        # Where the Cluster's infrastructure group and its classes' instance types come from.
        rule(CAPI, ["clusterclasses"], ["get"]),
        # Per Cluster: the credential's ServiceAccount, Role, binding and token Secret; the bundle's
        # ConfigMaps, Secret and ClusterResourceSet. Written with server-side apply (patch; create for the
        # first apply), deleted when the variable turns off.
        rule("", ["serviceaccounts", "configmaps"], write),
        rule(RBAC, ["roles", "rolebindings"], write),
        rule(ADDONS, ["clusterresourcesets"], write),
        # Secrets: the token Secret is read back for its token and CA, and CAPI's ``<cluster>-kubeconfig``
        # is read to remove the workload-side install when the variable turns off. Both are needed in
        # every Cluster namespace, which RBAC cannot name in advance; the addon runs in the management
        # cluster, next to CAPI's controllers, which hold the same access.
        rule("", ["secrets"], write),
        *delegated,
    ]


def addon_rbac(
    namespace: str = DEFAULT_NAMESPACE,
    infrastructure_groups: Sequence[str] = (DEFAULT_INFRASTRUCTURE_GROUP,),
) -> list[Manifest]:
    """The addon's namespace, ServiceAccount, ClusterRole and ClusterRoleBinding (management cluster)."""
    sa = (namespace, ADDON_NAME)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)},
        _service_account(ADDON_NAME, namespace),
        *_granted("ClusterRole", ADDON_NAME, None, addon_rules(infrastructure_groups), sa),
    ]
