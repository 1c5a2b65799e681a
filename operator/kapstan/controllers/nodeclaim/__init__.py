"""Everything that happens to one NodeClaim, after Karpenter's nodeclaim controllers.

``controller`` is the one queue for NodeClaims: a live claim goes through ``lifecycle`` (``launch``,
``registration``, ``initialization``, with ``liveness`` giving up a claim that does not come in time), a
deleting one through ``termination``; ``garbagecollection`` deletes a launched claim whose Machine or Node is
gone. ``adoption`` is apart: it watches Nodes and Machines that no claim owns.
"""

from kapstan.controllers.nodeclaim.adoption import Adoption, LeakedReplicas, StrayMachines
from kapstan.controllers.nodeclaim.controller import NodeClaimController
from kapstan.controllers.nodeclaim.lifecycle import Lifecycle
from kapstan.controllers.nodeclaim.liveness import Timeouts
from kapstan.controllers.nodeclaim.termination import TerminationTiming, Terminator

__all__ = [
    "Adoption",
    "LeakedReplicas",
    "Lifecycle",
    "NodeClaimController",
    "StrayMachines",
    "TerminationTiming",
    "Terminator",
    "Timeouts",
]
