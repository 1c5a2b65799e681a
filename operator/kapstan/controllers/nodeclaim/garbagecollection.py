"""A launched NodeClaim whose Machine or Node is gone is deleted at once, as Karpenter's garbage collection
deletes a NodeClaim whose instance is gone (docs/architecture.md#garbage-collection).

A Machine goes under a claim when someone deletes it by hand, a MachineHealthCheck remediates it, or it
fails (phase ``Failed``, an infrastructure failure reason); a Node goes when someone deletes it. Either way
the claim promises capacity that is not there: its pods would wait on it and the planner would count it as
room. Deleting the claim runs the termination finalizer, which removes exactly the claim's Machine if one is
left (so a Node deleted by hand takes its Machine and replica with it), and the pods get a fresh decision in
the next batch. The stores can lag a write by a moment, so "gone" is confirmed against the API server before
anything is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping

from kapstan.api.wellknown import MACHINE_ANNOTATION
from kapstan.capi.provider import CloudProvider, MachineRef, NotFound
from kapstan.controllers.nodeclaim.liveness import Steps
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODES

LAUNCH_FAILED = "LaunchFailed"


class GarbageCollection:
    def __init__(self, steps: Steps, provider: CloudProvider) -> None:
        self.steps = steps
        self.provider = provider
        self.cluster = steps.state.view

    async def reconcile(self, claim: Object) -> Result | None:
        """The give-up of a launched claim whose Machine or Node is gone; None while both are there."""
        lost = await self.lost(claim)
        if lost is None:
            return None
        reason, message = lost
        # A failed Machine is the offering's failure; a Machine or Node someone removed is not.
        return await self.steps.give_up(claim, reason, message, offering_failed=reason == LAUNCH_FAILED)

    async def lost(self, claim: Object) -> tuple[str, str] | None:
        """(reason, message) when the claim's Machine or Node is gone or failed, else None."""
        entry = self.cluster.of_claim(claim)
        ref = _recorded_machine(entry.claim_meta.annotations if entry.claim_meta else {})
        if not entry.machines and ref is not None and await self._machine_gone(ref):
            return "MachineGone", f"its Machine {ref.namespace}/{ref.name} no longer exists"
        for machine in entry.machines:
            where = f"{machine.ref.namespace}/{machine.ref.name}"
            if machine.being_deleted:
                return "MachineDeleted", f"its Machine {where} is being deleted"
            if machine.failure:
                return LAUNCH_FAILED, f"its Machine {where} failed: {machine.failure}"
        node_name = entry.recorded_node_name
        if node_name and entry.registered and entry.node is None and await self._node_gone(node_name):
            return "NodeGone", f"its Node {node_name} no longer exists"
        return None

    async def _machine_gone(self, ref: MachineRef) -> bool:
        try:
            await self.provider.get(ref)
        except NotFound:
            return True
        return False

    async def _node_gone(self, name: str) -> bool:
        try:
            await self.steps.state.workload.get(NODES, name)
        except ApiError as error:
            if error.not_found:
                return True
            raise
        return False


def _recorded_machine(annotations: Mapping[str, str]) -> MachineRef | None:
    """The Machine the launch recorded on the claim (``kapstan.io/machine: namespace/name``)."""
    namespace, _, name = annotations.get(MACHINE_ANNOTATION, "").partition("/")
    return MachineRef(namespace, name) if namespace and name else None
