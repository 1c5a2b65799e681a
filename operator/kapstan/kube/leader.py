"""Leader election on a ``coordination.k8s.io/v1`` Lease, after client-go's ``leaderelection``.

kapstan runs with more than one replica for availability, but two replicas scaling the same
MachineDeployments would double every decision, so only the holder of the Lease runs controllers. The
holder renews ``renewTime`` every ``retry_period``; the others try as often and take the Lease once
``lease_duration`` has passed on *their own* clock since they last saw it change (so clock skew between
replicas does not matter). A holder that cannot renew within ``renew_deadline`` stops leading before
anyone else may take over, because ``renew_deadline < lease_duration``. Updates carry the Lease's
resourceVersion, so of two candidates racing for an expired Lease exactly one wins (the other gets 409).

The Lease is kept by a thread of its own, with its own event loop and its own client (connection pool),
as client-go's renewal has a goroutine of its own: on the operator's loop a renewal waited behind
whatever held the loop, and at 3,000 pods it was not sent before the renew deadline three times in one
run although the API server answered Lease requests in under a second (issue 14). So that a wedged loop
cannot keep the Lease forever, the operator's loop stamps a heartbeat and the thread stops renewing once
the heartbeat is older than the lease duration; the loop then steps down as soon as it runs again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime

from kapstan.kube.client import LEASES, Client, Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderConfig:
    """Seconds; Kubernetes components use 15/10/2 and so do we by default."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                f"leader election needs 0 < retry_period ({self.retry_period}) < renew_deadline "
                f"({self.renew_deadline}) < lease_duration ({self.lease_duration})"
            )


class LeaderElector:
    def __init__(
        self,
        client: Client,
        namespace: str,
        name: str,
        identity: str,
        config: LeaderConfig | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        connect: Callable[[], Awaitable[Client]] | None = None,
    ) -> None:
        """``connect`` makes the renewal thread's own client on its loop (a kube Client is bound to the
        loop that first used it); without it the thread uses ``client``, which must not be bound to one
        (the unit tests' in-memory Lease)."""
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.config = config or LeaderConfig()
        self._clock = clock
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._renewed_at: float | None = None  # when we last held the Lease, by our clock
        self._connect = connect
        self._heartbeat = clock.now()  # when the caller's loop last ran, stamped there, read by the thread

    @property
    def is_leader(self) -> bool:
        return (
            self._renewed_at is not None and self._clock.now() - self._renewed_at < self.config.renew_deadline
        )

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Wait to become leader, run ``lead()`` while leading, and return when leadership is lost.

        ``lead`` is cancelled when renewal fails for ``renew_deadline``, or when this loop was stuck for
        longer than ``lease_duration`` (the thread stopped renewing meanwhile); when ``run`` itself is
        cancelled (shutdown), ``lead`` is cancelled and the Lease is released so a successor need not
        wait for it to expire, and the renewal thread is joined.
        """
        here = asyncio.get_running_loop()
        leading: asyncio.Future[None] = here.create_future()
        ended: asyncio.Future[None] = here.create_future()
        keeper = _LoopThread(f"{self._what} renewal", lambda: self._keep(here, leading, ended))
        beat = asyncio.ensure_future(self._beat())
        keeper.start()
        task: asyncio.Future[None] | None = None
        try:
            await asyncio.wait([leading, ended], return_when=asyncio.FIRST_COMPLETED)
            if not ended.done():
                log.info("%s: %s is now the leader", self._what, self.identity)
                task = asyncio.ensure_future(lead())
                await asyncio.wait([task, ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            beat.cancel()
            await keeper.stop()  # releases the Lease on the thread if it still holds it
        keeper.raise_failure()
        if task is not None and not task.cancelled():
            task.result()  # re-raises what ``lead`` raised

    async def _beat(self) -> None:
        """Stamp the heartbeat the renewal thread checks, while this loop runs."""
        while True:
            self._heartbeat = self._clock.now()
            await self._clock.sleep(self.config.retry_period / 2)

    async def _keep(
        self, caller: asyncio.AbstractEventLoop, leading: asyncio.Future[None], ended: asyncio.Future[None]
    ) -> None:
        """The renewal thread: acquire, tell the caller, renew until lost; when cancelled (shutdown),
        release the Lease if it is still held. ``ended`` is done on the caller's loop however it ends."""
        try:
            if self._connect is not None:
                self.client = await self._connect()
            while not await self.try_acquire_or_renew():
                await self._clock.sleep(self.config.retry_period)
            caller.call_soon_threadsafe(_set_done, leading)
            await self._renew_until_lost()
        except asyncio.CancelledError:
            if self.is_leader:
                await self.release()
            raise
        finally:
            caller.call_soon_threadsafe(_set_done, ended)

    async def _renew_until_lost(self) -> None:
        tick = self._renewed_at or self._clock.now()  # retry periods counted from the acquisition
        while True:
            tick += self.config.retry_period
            await self._clock.sleep_until(tick)
            tick = max(tick, self._clock.now())  # a late thread renews once, not once per missed tick
            silent = self._clock.now() - self._heartbeat
            if silent > self.config.lease_duration:
                log.warning(
                    "%s: %s stops renewing: its event loop has not run for %.1fs",
                    self._what,
                    self.identity,
                    silent,
                )
                self._renewed_at = None
                return
            await self._renew_before_deadline()
            if not self.is_leader:
                log.warning("%s: %s lost the lease", self._what, self.identity)
                return

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True if we hold the Lease afterwards. API errors count as a failed attempt."""
        try:
            return await self._attempt()
        except ApiError as error:
            log.warning("%s: %s", self._what, error)
            return False

    async def _renew_before_deadline(self) -> None:
        """One renewal, given up when the renew deadline passes while it waits on the API server, as
        client-go bounds each renewal by its deadline: the request timeout (30 s) is longer than the Lease,
        so an unbounded wait kept the controllers running after another replica could have taken over."""
        attempt = asyncio.ensure_future(self.try_acquire_or_renew())
        deadline = asyncio.ensure_future(
            self._clock.sleep_until((self._renewed_at or 0.0) + self.config.renew_deadline)
        )
        try:
            await asyncio.wait([attempt, deadline], return_when=asyncio.FIRST_COMPLETED)
        finally:
            deadline.cancel()
            if not attempt.done():
                attempt.cancel()
                log.warning("%s: no answer to the renewal before the renew deadline", self._what)
            await asyncio.gather(attempt, deadline, return_exceptions=True)

    async def release(self) -> None:
        """Give the Lease up now (holder emptied) if we hold it; errors are logged, not raised."""
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
            if lease.get("spec", {}).get("holderIdentity") != self.identity:
                return
            lease["spec"].update(holderIdentity="", leaseDurationSeconds=1, renewTime=_micro_time())
            await self.client.replace(LEASES, lease)
        except ApiError as error:
            log.warning("%s: releasing: %s", self._what, error)
        finally:
            self._renewed_at = None

    async def _attempt(self) -> bool:
        now = self._clock.now()
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
        except ApiError as error:
            if not error.not_found:
                raise
            await self.client.create(LEASES, self._new_lease())
            self._renewed_at = now
            return True
        spec = lease.setdefault("spec", {})
        holder = spec.get("holderIdentity") or ""
        observed = (holder, str(spec.get("renewTime", "")))
        if observed != self._observed:
            self._observed, self._observed_at = observed, now
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            return False
        stamp = _micro_time()
        if holder != self.identity:
            spec["acquireTime"] = stamp
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=round(self.config.lease_duration),
            renewTime=stamp,
        )
        try:
            await self.client.replace(LEASES, lease)
        except ApiError as error:
            if error.conflict:
                return False  # someone else updated it first
            raise
        self._renewed_at = now
        return True

    def _new_lease(self) -> Object:
        stamp = _micro_time()
        return {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": round(self.config.lease_duration),
                "acquireTime": stamp,
                "renewTime": stamp,
                "leaseTransitions": 0,
            },
        }

    @property
    def _what(self) -> str:
        return f"lease {self.namespace}/{self.name}"


def _micro_time() -> str:
    """A ``MicroTime`` as the API server writes it."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _LoopThread:
    """One coroutine run on a thread and event loop of its own; ``stop`` cancels it and joins the thread."""

    def __init__(self, name: str, main: Callable[[], Coroutine[None, None, None]]) -> None:
        self._loop = asyncio.new_event_loop()
        self._main = main
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._task = self._loop.create_task(self._main())
            self._loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except BaseException as failure:  # handed to the caller's loop by raise_failure
            self._failure = failure
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def stop(self) -> None:
        with suppress(RuntimeError):  # the loop is closed: the coroutine has ended already
            self._loop.call_soon_threadsafe(self._cancel)
        await asyncio.to_thread(self._thread.join)

    def raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure
