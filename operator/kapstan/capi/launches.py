"""Launches on one MachineDeployment wait together: N NodeClaims are one replicas write of +N.

Each ``create`` joins its MD's waiting set and waits on a future; one task per MD serves the set in
rounds, the first after a moment's gathering (``GATHER``) so that one plan's launches are one write. A round reads the MD, its Cluster and its Machines once from the API server for every waiter,
hands each waiter the Machine already claimed for it (a retry), claims free Machines for the others (a
few claims at a time in parallel), and raises replicas once for all that still lack one, counting
replicas above the live Machines (an earlier round, or a process that crashed after scaling) as Machines
already on their way for them: so a retry never scales twice. Between rounds the task waits for the management informers to show a change
of the MD or its Machines (or ``poll_interval``), so Machines are claimed as the MachineSet stamps them.

Rounds take the MD's lock, which deletes and trims of the MD take too, and so decide from counts nobody
else is changing. Between rounds the lock is free, except while Machines are on their way (replicas
above the Machines that exist): a delete lowering replicas then would make the MachineSet drop a Machine
still to come instead of the one marked for deletion, so deletes wait until the new Machines exist.
Launches never wait on the lock: they join the waiting set and the next round serves them. MDs are
served in parallel, at most ``ROUNDS_AT_ONCE`` rounds at a time.

The failures of issue 15 are kept: an MD whose ``ScalingUp`` condition says scaling up is blocked fails
every waiter with ``LaunchBlocked`` and takes back the replicas its rounds added and no Machine came for,
and so does one whose MachineSet's preflight checks hold creation (``PreflightHold``; read from the
MachineSets only while Machines are on their way, the one moment a hold can matter);
a waiter past its own deadline (what is left of its claim's launch timeout) fails with ``CreateError``;
the waiters beyond the MD's max size fail with ``InsufficientCapacity``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from kapstan.capi import contract as c
from kapstan.capi import provider as p
from kapstan.capi.cache import ManagementCache
from kapstan.capi.mdapi import MachineDeploymentApi
from kapstan.capi.reads import claim_of, deleting, launched
from kapstan.kube.client import Object
from kapstan.kube.errors import ApiError
from kapstan.kube.store import Event

log = logging.getLogger(__name__)

FORBIDDEN = 403

ROUNDS_AT_ONCE = 16
"""MDs whose rounds run at the same time: each is three reads and a few writes, so a fleet of hundreds of
MDs scaling at once does not send the API server hundreds of requests in one instant."""

CLAIMS_AT_ONCE = 8
"""Machine claims one round sends at the same time: a claim is one small patch, so a round that finds
dozens of new Machines hands them out in a few round trips without a burst of dozens of writes."""

GATHER = 0.2
"""Seconds an idle MD's first round waits for more launches, again while more keep joining (at most
``GATHER_LOOKS`` times): one plan's NodeClaims start their launches over a few hundred milliseconds, and
a round served at the first of them scaled +1 and then +13, which CAPI's MachineSet creates in two passes
(in bench.live's base11 run, the 14th Machine of c3-32-zone-a came 1.7 s after the first pass's one)."""

GATHER_LOOKS = 5

MdKey = tuple[str, str]
"""(namespace, name) of an MD."""


@dataclass
class _Waiter:
    """A launch waiting for a Machine of its MD."""

    nodeclaim: str
    wait: float
    deadline: float
    """``time.monotonic()`` after which it fails with ``CreateError``."""
    future: asyncio.Future[p.LaunchedMachine]
    scaled_for: bool = False
    """A round of this process added a replica for it (taken back if the MD turns out blocked)."""

    @property
    def pending(self) -> bool:
        return not self.future.done()

    def resolve(self, machine: p.LaunchedMachine) -> None:
        """Hand the launch its Machine, unless it is over (served, failed, or its caller cancelled)."""
        if self.pending:
            self.future.set_result(machine)

    def fail(self, error: BaseException) -> None:
        if self.pending:
            self.future.set_exception(error)


@dataclass
class _Queue:
    """An MD's waiting launches, by NodeClaim, and the task serving them while any wait."""

    waiting: dict[str, _Waiter] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a launch joins or the informers show the MD or one of its Machines changed."""
    joined: int = 0
    """Launches that joined so far (the first round's gathering watches it grow)."""
    server: asyncio.Task[None] | None = None


class CoalescedLaunches:
    def __init__(
        self,
        api: MachineDeploymentApi,
        locks: defaultdict[MdKey, asyncio.Lock],
        cache: ManagementCache,
        *,
        machine_timeout: float,
        poll_interval: float,
        gather: float = GATHER,
    ) -> None:
        """``machine_timeout``: the longest a launch waits for its Machine; ``poll_interval``: the longest
        between two rounds of an MD with launches waiting when the informers show no change; ``gather``:
        see ``GATHER`` (0: an idle MD's first round starts at once)."""
        self._api = api
        self._locks = locks
        self._machine_timeout = machine_timeout
        self._poll_interval = poll_interval
        self._gather = gather
        self._queues: dict[MdKey, _Queue] = {}
        self._rounds = asyncio.Semaphore(ROUNDS_AT_ONCE)
        self._machinesets_forbidden = False
        cache.machines.add_handler(self._on_machine)
        cache.machine_deployments.add_handler(self._on_machine_deployment)

    async def create(self, request: p.LaunchRequest) -> p.LaunchedMachine:
        what = f"launching nodeclaim {request.nodeclaim}"
        key = await self._api.machine_deployment(request.source, what)
        wait = self._machine_timeout if request.wait is None else min(request.wait, self._machine_timeout)
        queue = self._queues.setdefault(key, _Queue())
        waiter = queue.waiting.get(request.nodeclaim)
        if waiter is None or not waiter.pending:
            future = asyncio.get_running_loop().create_future()
            waiter = _Waiter(request.nodeclaim, wait, time.monotonic() + wait, future)
            queue.waiting[request.nodeclaim] = waiter
            queue.joined += 1
        queue.changed.set()
        if queue.server is None:
            queue.server = asyncio.create_task(self._serve(key, queue))
        # A cancelled caller (its reconcile was cancelled, the operator stops leading) cancels its own
        # future only: the rounds leave it out from then on, and a Machine a round was claiming for it
        # meanwhile stays claimed for the NodeClaim, where a retry finds it.
        return await waiter.future

    async def _serve(self, key: MdKey, queue: _Queue) -> None:
        lock = self._locks[key]
        held = False
        try:
            await self._gather_launches(queue)
            while True:
                for name in [name for name, w in queue.waiting.items() if not w.pending]:
                    del queue.waiting[name]
                if not queue.waiting:
                    return
                queue.changed.clear()
                if not held:
                    await lock.acquire()
                    held = True
                try:
                    async with self._rounds:
                        on_the_way = await self._round(key, list(queue.waiting.values()))
                except Exception as error:  # every waiter gets the failure of the round it waited on
                    _fail(queue.waiting.values(), error)
                    on_the_way = False
                if not on_the_way:
                    lock.release()
                    held = False
                if any(w.pending for w in queue.waiting.values()):
                    await self._pause(queue.changed)
        finally:
            if held:
                lock.release()
            for waiter in queue.waiting.values():
                waiter.future.cancel()  # only when the task itself is cancelled (the operator stops)
            queue.server = None
            del self._queues[key]

    async def _gather_launches(self, queue: _Queue) -> None:
        """Before an idle MD's first round: while launches keep joining, ``gather`` seconds more."""
        for _ in range(GATHER_LOOKS if self._gather > 0 else 0):
            joined = queue.joined
            await asyncio.sleep(self._gather)
            if queue.joined == joined:
                return

    async def _pause(self, changed: asyncio.Event) -> None:
        """Until the informers show a change, or ``poll_interval``; at least a moment, so the burst of
        events one scale-up makes (each new Machine, then its status) is one round, not dozens."""
        settle = min(0.1, self._poll_interval)
        await asyncio.sleep(settle)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), self._poll_interval - settle)

    async def _round(self, key: MdKey, waiters: list[_Waiter]) -> bool:
        """One look at the MD for every waiter; True while Machines are on their way.

        The errors it raises are worded without a subject (``what`` is empty): ``_fail`` gives each
        waiter its own copy, "launching nodeclaim NAME: ..."."""
        ns, name = key
        md = await self._api.get_md(ns, name, "")
        await self._api.refuse_if_paused(md, "")
        machines = await self._api.machines(ns, name)
        live = [m for m in machines if not deleting(m)]
        by_claim = {w.nodeclaim: w for w in waiters}
        for machine in live:
            mine = by_claim.get(claim_of(machine))
            if mine is not None:
                mine.resolve(launched(machine))
        free = [m for m in live if not claim_of(m)]
        if not await self._claim_all(list(zip([w for w in waiters if w.pending], free, strict=False))):
            # Someone claimed or marked one of those Machines: the next round looks again, before any
            # scaling.
            return _on_the_way(md, machines)
        unserved = [w for w in waiters if w.pending]
        if not unserved:
            return _on_the_way(md, machines)
        blocked = c.scale_up_blocked(md)
        if blocked:
            await self._take_back(md, unserved, len(live))
            raise p.LaunchBlocked(f": {c.display(md)}: {blocked}")
        # Replicas above the live Machines are Machines on their way (an earlier round, or a process
        # that crashed after scaling): they are the first unserved launches', so only the rest scale.
        coming = max(0, c.replicas(md) - len(live))
        if coming:
            # Only then can a MachineSet be holding creation, and only its own condition says so.
            held = await self._preflight_hold(ns, name)
            if held:
                await self._take_back(md, unserved, len(live))
                raise p.PreflightHold(f": {c.display(md)}: {held}")
        now = time.monotonic()
        for waiter in [w for w in unserved if now > w.deadline]:
            waiter.fail(
                p.CreateError(
                    f"launching nodeclaim {waiter.nodeclaim}: no new Machine of {ns}/{name} "
                    f"within {waiter.wait:.0f}s"
                )
            )
        unserved = [w for w in unserved if w.pending]
        if len(unserved) > coming and await self._scale_up(md, unserved[coming:]):
            return True
        return _on_the_way(md, machines)

    async def _claim_all(self, pairs: list[tuple[_Waiter, Object]]) -> bool:
        """Claim each free Machine for its waiter, ``CLAIMS_AT_ONCE`` at a time (one at a time, a round
        of 20 new Machines took 20 round trips); False if one was no longer free. Each success is
        handed to its waiter even when another claim failed or raised (it is that NodeClaim's now)."""
        limit = asyncio.Semaphore(CLAIMS_AT_ONCE)

        async def claim(waiter: _Waiter, machine: Object) -> bool:
            async with limit:
                claimed = await self._api.claim(machine, waiter.nodeclaim)
            if claimed is not None:
                waiter.resolve(claimed)
            return claimed is not None

        outcomes = await asyncio.gather(*(claim(w, m) for w, m in pairs), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return all(outcomes)

    async def _preflight_hold(self, namespace: str, md_name: str) -> str:
        """Why one of the MD's MachineSets holds Machine creation on its preflight checks, or ""."""
        if self._machinesets_forbidden:
            return ""
        selector = f"{c.DEPLOYMENT_NAME_LABEL}={md_name}"
        try:
            machine_sets = await self._api.list(c.MACHINESETS, namespace, selector)
        except ApiError as error:
            if error.status != FORBIDDEN:
                raise
            # A management Role from before kapstan read MachineSets: launch as before (a hold then ends
            # at the launch timeout) rather than fail every launch, and do not ask again, since kr8s
            # answers each 403 by reloading the credentials and replacing the client's connections.
            log.warning("cannot list MachineSets: preflight holds are not seen", extra={"error": str(error)})
            self._machinesets_forbidden = True
            return ""
        for machine_set in machine_sets:
            held = c.creation_held(machine_set)
            if held:
                return (
                    f"{c.display(machine_set)}: {held} (CAPI's MachineSet preflight checks; the "
                    f"{c.SKIP_PREFLIGHT_CHECKS_ANNOTATION} annotation on the MD skips them)"
                )
        return ""

    async def _scale_up(self, md: Object, waiters: list[_Waiter]) -> bool:
        """One replicas increase for every waiter the MD's max size leaves room for; the waiters beyond
        it fail with ``InsufficientCapacity`` (their launch moves to another offering). False when
        nothing was written (no room, or another writer changed replicas: the next round re-reads)."""
        current = c.replicas(md)
        maximum = c.size_bound(md, c.MAX_SIZE_ANNOTATION)
        room = len(waiters) if maximum is None else max(0, min(len(waiters), maximum - current))
        for waiter in waiters[room:]:
            waiter.fail(
                p.InsufficientCapacity(
                    f"launching nodeclaim {waiter.nodeclaim}: {c.display(md)} is at its max size {maximum}"
                )
            )
        if not room or not await self._api.scale(md, current + room):
            return False
        for waiter in waiters[:room]:
            waiter.scaled_for = True
        return True

    async def _take_back(self, md: Object, unserved: list[_Waiter], live: int) -> None:
        """No Machine will come: lower replicas by those this process added for the unserved waiters,
        not by anyone else's (a leaked replica is the leaked-replica controller's to take back)."""
        ours = sum(1 for w in unserved if w.scaled_for)
        extra = min(ours, c.replicas(md) - live)
        if extra > 0:
            await self._api.scale(md, c.replicas(md) - extra)

    def _on_machine(self, event: Event) -> None:
        md_name = c.labels_of(event.object).get(c.DEPLOYMENT_NAME_LABEL, "")
        self._changed((c.namespace(event.object), md_name))

    def _on_machine_deployment(self, event: Event) -> None:
        self._changed((c.namespace(event.object), c.name(event.object)))

    def _changed(self, key: MdKey) -> None:
        queue = self._queues.get(key)
        if queue is not None:
            queue.changed.set()


def _on_the_way(md: Object, machines: list[Object]) -> bool:
    """Whether replicas exceed the Machines the MachineSet counts (all but those already being deleted):
    then Machines are still to be created."""
    return c.replicas(md) > sum(1 for m in machines if not c.being_deleted(m))


def _fail(waiters: Iterable[_Waiter], error: Exception) -> None:
    """Fail each pending waiter with ``error``: a typed one reworded for its NodeClaim, anything else
    (an outage, a bug) as it is."""
    for waiter in waiters:
        if not waiter.pending:
            continue
        if isinstance(error, p.ProviderError):
            mine = type(error)(f"launching nodeclaim {waiter.nodeclaim}{error}")
            mine.__cause__ = error.__cause__
            waiter.fail(mine)
        else:
            waiter.fail(error)
