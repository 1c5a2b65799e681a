"""The Cluster API CRDs are the real generated schemas: the API server rejects what CAPI would."""

from __future__ import annotations

import kr8s
import pytest
from sandbox_helpers import MachineDeployment, TestMachineTemplate, namespace

from kapstan.local import Sandbox
from kapstan.local.manifests import machine_deployment


def test_machinedeployment_with_misspelled_required_field_is_rejected(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(api, "validation")
    manifest = machine_deployment("bad", ns, cluster="c", bootstrap="b", infra="i")
    manifest["spec"]["clusterNmae"] = manifest["spec"].pop("clusterName")
    with pytest.raises(kr8s.ServerError) as err:
        MachineDeployment(manifest, api=api).create()
    assert err.value.response is not None
    assert err.value.response.status_code == 422
    assert "spec.clusterName" in str(err.value)


def test_machinedeployment_with_unknown_deletion_order_is_rejected(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(api, "validation")
    manifest = machine_deployment("bad-order", ns, cluster="c", bootstrap="b", infra="i")
    manifest["spec"]["deletion"] = {"order": "Biggest"}
    with pytest.raises(kr8s.ServerError) as err:
        MachineDeployment(manifest, api=api).create()
    assert "spec.deletion.order" in str(err.value)


def test_valid_machinedeployment_is_accepted(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(api, "validation")
    md = MachineDeployment(machine_deployment("good", ns, cluster="c", bootstrap="b", infra="i"), api=api)
    md.create()
    # CAPI's defaulting webhook (registered by the sandbox like on a real management cluster) labelled it.
    assert md.raw["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "c"
    md.delete()


def test_capi_validating_webhook_rejects_a_selector_that_misses_the_template(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(api, "validation")
    manifest = machine_deployment("bad-selector", ns, cluster="c", bootstrap="b", infra="i")
    manifest["spec"]["selector"] = {"matchLabels": {"pool": "other"}}
    with pytest.raises(kr8s.ServerError) as err:
        MachineDeployment(manifest, api=api).create()
    assert "admission webhook" in str(err.value)


def test_provider_template_requires_an_instance_type(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(api, "validation")
    with pytest.raises(kr8s.ServerError) as err:
        TestMachineTemplate(
            {"metadata": {"name": "no-flavor", "namespace": ns}, "spec": {"template": {"spec": {}}}}, api=api
        ).create()
    assert "instanceType" in str(err.value)
