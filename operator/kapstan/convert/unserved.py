"""Karpenter v1alpha5 objects a live cluster holds: kapstan serves none of them, and says so at start-up.

A cluster moving from an old Karpenter still has its Provisioner CRD and Provisioners. kapstan's informers
watch ``karpenter.sh/v1`` only, so without this the operator and ``simulate --kubeconfig`` would plan as
if those pools did not exist. Discovery tells whether the version is served at all (any authenticated
user may read it); listing names the objects, and when the credential may not list them the line says
that instead.
"""

from __future__ import annotations

from kapstan.api.legacy import LEGACY_API_VERSION, LEGACY_KINDS, not_served
from kapstan.kube.client import Client
from kapstan.kube.errors import ApiError


async def unserved_objects(client: Client, where: str) -> list[str]:
    """One line per v1alpha5 Provisioner or Machine in the cluster (``where`` names it), empty when the
    version is not served there."""
    try:
        served = await client.resources(LEGACY_API_VERSION)
    except ApiError as error:
        if error.not_found:
            return []
        raise
    lines = []
    for api_version, kind in sorted(LEGACY_KINDS):
        resource = served.get(kind)
        if resource is None:
            continue
        try:
            listed = await client.request("GET", resource)
        except ApiError as error:
            if error.status != 403:
                raise
            lines.append(
                f"{where} serves {api_version} {resource.plural}, which kapstan does not serve, and this "
                f"credential may not list them: convert them with `kapstan convert -f FILE`"
            )
            continue
        for item in listed.get("items", []):
            lines.append(not_served(kind, item["metadata"]["name"], api_version, where))
    return lines
