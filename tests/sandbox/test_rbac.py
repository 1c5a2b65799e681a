"""RBAC is enforced: a ServiceAccount can do exactly what its Role grants, in the management cluster."""

from __future__ import annotations

import kr8s
import pytest
from kr8s.objects import Role, RoleBinding
from sandbox_helpers import MachineDeployment, create, get, namespace, wait_for

from kapstan.local import Sandbox


def test_service_account_is_limited_to_its_role(sandbox: Sandbox) -> None:
    admin = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(admin, "rbac")
    sa = kr8s.api(kubeconfig=str(sandbox.service_account_kubeconfig(ns, "scaler", workload=False)))

    with pytest.raises(kr8s.ServerError) as err:
        get(sa, MachineDeployment, namespace=ns)
    assert err.value.response is not None and err.value.response.status_code == 403

    create(
        admin,
        Role,
        {
            "metadata": {"name": "md-reader", "namespace": ns},
            "rules": [
                {"apiGroups": ["cluster.x-k8s.io"], "resources": ["machinedeployments"], "verbs": ["list"]}
            ],
        },
    )
    create(
        admin,
        RoleBinding,
        {
            "metadata": {"name": "md-reader", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "md-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "scaler", "namespace": ns}],
        },
    )
    # The RBAC authorizer reads bindings through an informer: allow it a moment to see the new one.
    wait_for("the RoleBinding to take effect", lambda: _can_list(sa, ns))
    assert get(sa, MachineDeployment, namespace=ns) == []
    with pytest.raises(kr8s.ServerError) as err:
        get(sa, MachineDeployment, namespace="default")  # granted in its namespace only
    assert err.value.response is not None and err.value.response.status_code == 403


def _can_list(api: kr8s.Api, ns: str) -> bool:
    try:
        get(api, MachineDeployment, namespace=ns)
    except kr8s.ServerError:
        return False
    return True
