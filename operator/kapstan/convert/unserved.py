"""Karpenter v1alpha5 objects a live cluster holds: kapstan serves none of them, and says so.

A cluster moving from an old Karpenter still has its Provisioner CRD and Provisioners, and an old
article's Provisioner may be applied to a cluster kapstan already runs. kapstan's informers watch
``karpenter.sh/v1`` only, so without this the operator and ``simulate --kubeconfig`` would plan as if
those pools did not exist. Discovery tells whether the version is served at all (any authenticated user
may read it); listing names the objects, and when the credential may not list them the line says that
instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapstan.api.legacy import LEGACY_API_VERSION, LEGACY_KINDS, not_served
from kapstan.kube.client import Client, Object
from kapstan.kube.errors import ApiError


@dataclass(frozen=True)
class Unserved:
    """One thing to say: an object that is not served, or a kind this credential may not list."""

    message: str
    obj: Object | None
    """The object, with its apiVersion and kind (a list's items lack them), so an Event can name it;
    None for a kind whose objects could not be listed."""

    @property
    def key(self) -> str:
        """What a second look would find the same: the object's uid, else the message."""
        uid = (self.obj or {}).get("metadata", {}).get("uid")
        return str(uid) if uid else self.message


async def unserved(client: Client, where: str) -> list[Unserved]:
    """Each v1alpha5 Provisioner or Machine in the cluster (``where`` names it), empty when the version is
    not served there."""
    try:
        served = await client.resources(LEGACY_API_VERSION)
    except ApiError as error:
        if error.not_found:
            return []
        raise
    found = []
    for api_version, kind in sorted(LEGACY_KINDS):
        resource = served.get(kind)
        if resource is None:
            continue
        try:
            listed = await client.request("GET", resource)
        except ApiError as error:
            if error.status != 403:
                raise
            message = (
                f"{where} serves {api_version} {resource.plural}, which kapstan does not serve, and this "
                f"credential may not list them: convert them with `kapstan convert -f FILE`"
            )
            found.append(Unserved(message, None))
            continue
        for item in listed.get("items", []):
            obj = {**item, "apiVersion": api_version, "kind": kind}
            found.append(Unserved(not_served(kind, item["metadata"]["name"], api_version, where), obj))
    return found


async def unserved_objects(client: Client, where: str) -> list[str]:
    """One line per v1alpha5 object (or unlistable kind) in the cluster: ``unserved``'s messages."""
    return [found.message for found in await unserved(client, where)]
