"""Karpenter v1alpha5 objects in the workload cluster, named where their owner looks for them.

kapstan serves ``karpenter.sh/v1`` only, so a Provisioner (from a cluster that ran an old Karpenter, or
applied from an old article to a cluster kapstan already runs) plans nothing. The leader looks when it
starts leading and every ``RECHECK`` seconds after, and names each object once: a warning in the log and
a Warning Event ``NotServed`` on the object itself, so that ``kubectl describe provisioner`` points to
``kapstan convert``. The next looks find it again and say nothing: one Event per object, not one more
count every pass. What was named is remembered by uid in memory (kapstan may not read Events back, see
``install/rbac.py``), so a new leader names each object once more; a deleted and recreated object has a
new uid and is named again.
"""

from __future__ import annotations

import logging

from kapstan.convert.unserved import unserved
from kapstan.kube.client import Client
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder

log = logging.getLogger(__name__)

RECHECK = 60.0
"""Seconds between looks: a discovery call (and a list when the version is served) each."""
NOT_SERVED = "NotServed"
"""The Event's reason."""
WHERE = "the workload cluster"


class UnservedObjects:
    """Names each v1alpha5 object once, in the log and in a Warning Event on it."""

    def __init__(
        self, client: Client, events: EventRecorder, *, recheck: float = RECHECK, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.client = client
        self.events = events
        self.recheck = recheck
        self.clock = clock
        self._named: set[str] = set()

    async def run(self) -> None:
        while True:
            await self.look()
            await self.clock.sleep(self.recheck)

    async def look(self) -> None:
        """One look: name what was not named before."""
        try:
            found = await unserved(self.client, WHERE)
        except ApiError as error:
            # Only a hint to the user: an API hiccup is worth a line, and the next look tries again.
            log.info("could not look for karpenter.sh/v1alpha5 objects: %s", error)
            return
        for item in found:
            if item.key in self._named:
                continue
            self._named.add(item.key)
            log.warning(item.message)
            if item.obj is not None:
                await self.events.emit(item.obj, "Warning", NOT_SERVED, item.message)
