"""One API client per cluster, and the handful of raw requests the controllers make.

kapstan talks to two clusters (management and workload), each through one kr8s async API object created
once at start-up and shared by every informer and controller, so they share one connection pool. We use
kr8s's raw ``call_api`` rather than its object classes: informers need the list's resourceVersion, the
watch's bookmarks and ERROR events, and control over timeouts, which the object layer hides.

The pool is sized for the operator's concurrency (``POOL_LIMITS``): httpx keeps only 20 idle connections,
for 5 s, by default, so every pause of more than 5 s between bursts (a batch window, a disruption pass)
closed them all and the next burst paid a TLS handshake per connection again, and in a burst of more than
20 requests (a fleet scale-up's launches, Events, evictions) the connections beyond the 20th were closed
after one request; TLS handshakes were about a tenth of the operator's CPU at 1,000 pods (issue 14).
But the pool is not free either: httpcore looks at every connection it holds, polling each idle one's
socket and counting the idle ones once for each, whenever a request is added or done, and at every
queued request again. With room for 256 connections that was 11% of the operator's loop at 3,000 pods.
So the pool holds what runs at once and no more, and requests beyond ``REQUEST_CONCURRENCY`` wait on a
semaphore rather than in httpcore's queue. (HTTP/2, one multiplexed connection as client-go has, costs
more CPU a request here: its framing is pure Python.)
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import kr8s.asyncio
from kr8s._api import Api as _Kr8sApi

from kapstan.kube.errors import ApiError, translate

Object = dict[str, Any]

REQUEST_CONCURRENCY = 32
"""Requests (watches aside) one cluster's client has in flight at once; the others wait their turn."""
WATCH_CONNECTIONS = 16
"""Room in the pool for the informers' watches (13 at most, on one client), each holding a connection."""
POOL_LIMITS = httpx.Limits(
    max_connections=REQUEST_CONCURRENCY + WATCH_CONNECTIONS,
    max_keepalive_connections=REQUEST_CONCURRENCY + WATCH_CONNECTIONS,
    keepalive_expiry=300.0,
)
"""Connections kept open to one API server: as many as run at once, idle ones for 5 minutes."""


REAUTHENTICATIONS_WAITED = 100
"""How many reauthentications in a row a new session waits out before it gives up on finding a server."""


class _PooledApi(_Kr8sApi):
    """kr8s's API object with a connection pool of ``POOL_LIMITS`` (kr8s builds its httpx client with
    httpx's defaults and offers no way to pass limits), and a session never made without a server.

    kr8s answers a 401 or 403 by reloading the credentials and making a new session; the reload empties
    the server while it reads the kubeconfig, and kr8s's own session maker reads the server without the
    credentials' lock. A restarted API server answers 403 to a ServiceAccount for a moment (its RBAC
    cache is empty): so another request making its session during one of those reloads made one with no
    base URL, and every request after it failed ("Request URL is missing an 'http://' or 'https://'
    protocol"; chaos scenario 5, where the leader lost its Lease so and exited). Here the session is made
    only once the credentials' lock is free and the server is back."""

    async def _create_session(self) -> None:
        if self._session:
            with suppress(RuntimeError):
                await self._session.aclose()
            self._session = None
        verify = await self.auth.ssl_context()  # type: ignore[no-untyped-call]  # waits out a reload
        for _ in range(REAUTHENTICATIONS_WAITED):
            if self.auth.server:
                break
            verify = await self.auth.ssl_context()  # type: ignore[no-untyped-call]
        if not self.auth.server:
            raise ValueError("no API server in the credentials after reloading them")
        # No await from here on: the server, token and TLS settings are those of one load.
        headers = {"User-Agent": self.__version__, "content-type": "application/json"}
        if self.auth.token:
            headers["Authorization"] = f"Bearer {self.auth.token}"
        self._session = httpx.AsyncClient(
            base_url=self.auth.server,
            headers=headers,
            verify=verify,
            timeout=self._timeout,
            follow_redirects=True,
            proxy=self.auth.proxy,
            limits=POOL_LIMITS,
        )


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the API: ``Resource("coordination.k8s.io", "v1", "leases", "Lease")``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


PatchType = Literal["merge", "json", "strategic"]
PATCH_CONTENT_TYPES: dict[PatchType, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",  # built-in kinds only
}

UNSUPPORTED_VERSION_WARNING = r"Kubernetes version \S+ is not supported\. "
"""The start of the UserWarning kr8s raises when the server is newer (or older) than the versions its
release lists: kapstan talks to the API through raw requests whose shape does not change between
minor versions, so to a user the warning is noise on every command."""


@contextmanager
def without_version_warning() -> Iterator[None]:
    """Creating kr8s API objects inside this block does not show kr8s's "Kubernetes version ... is not
    supported" warning; every other warning still shows."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=UNSUPPORTED_VERSION_WARNING, category=UserWarning)
        yield


CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")


class Client:
    """A cluster's API server; build one with ``await Client.connect(kubeconfig)`` and share it."""

    def __init__(
        self,
        api: kr8s.asyncio.Api,
        *,
        request_timeout: float = 30.0,
        in_flight: asyncio.Semaphore | None = None,
    ) -> None:
        self._api = api
        self.request_timeout = request_timeout
        self._in_flight = in_flight or asyncio.Semaphore(REQUEST_CONCURRENCY)  # one per pool

    @classmethod
    async def connect(cls, kubeconfig: str | None = None, *, request_timeout: float = 30.0) -> Client:
        """``kubeconfig=None`` means in-cluster (or ``$KUBECONFIG``), as kr8s resolves it."""
        with (
            translate(f"connecting to {kubeconfig or 'the in-cluster API server'}"),
            without_version_warning(),
        ):
            # One API object per connect (not kr8s's per-thread cache): one pool per cluster we talk to.
            api = await _PooledApi(kubeconfig=kubeconfig, bypass_factory=True)
        return cls(api, request_timeout=request_timeout)

    def read_only(self) -> Client:
        """The same connection, refusing every request but GET (watches are GETs too): for commands that
        promise to write nothing, so a controller's write path reached by mistake fails, never writes."""
        return ReadOnlyClient(self._api, request_timeout=self.request_timeout, in_flight=self._in_flight)

    async def request(
        self,
        method: str,
        resource: Resource,
        *,
        namespace: str | None = None,
        name: str = "",
        subresource: str = "",
        params: dict[str, str] | None = None,
        body: Object | list[Object] | None = None,
        content_type: str = "application/json",
    ) -> Object:
        """One request; ``subresource`` is ``status``, ``scale``, ``eviction``... of object ``name``."""
        url = "/".join(part for part in (resource.plural, name, subresource) if part)
        what = " ".join(p for p in (method, resource.plural, _display(namespace, name), subresource) if p)
        with translate(what):
            async with (
                self._in_flight,
                self._api.call_api(
                    method,
                    version=resource.api_version,
                    namespace=namespace if resource.namespaced else None,
                    url=url,
                    params=params,
                    content=json.dumps(body) if body is not None else None,
                    headers={"Content-Type": content_type},
                    timeout=self.request_timeout,
                ) as response,
            ):
                result: Object = response.json()
                return result

    async def resources(self, api_version: str) -> dict[str, Resource]:
        """Discovery: the kinds served at ``api_version`` (``group/version``, or ``v1``), by kind.

        Infrastructure templates are referenced by group and kind only, and every provider names its own
        kinds, so their plurals come from the server rather than from a table of ours.
        """
        with translate(f"discovering {api_version}"):
            async with (
                self._in_flight,
                self._api.call_api(
                    "GET", version=api_version, url="", timeout=self.request_timeout
                ) as response,
            ):
                listing: Object = response.json()
        group, _, version = api_version.rpartition("/")
        return {
            item["kind"]: Resource(group, version, item["name"], item["kind"], bool(item.get("namespaced")))
            for item in listing.get("resources", [])
            if "/" not in item["name"]  # subresources: "machinedeployments/scale"
        }

    async def preferred_version(self, group: str) -> str:
        """The version the server prefers for ``group`` (``group/version``)."""
        with translate(f"discovering API group {group}"):
            async with (
                self._in_flight,
                self._api.call_api(
                    "GET", version="", base=f"/apis/{group}", url="", timeout=self.request_timeout
                ) as response,
            ):
                found: Object = response.json()
        return str(found["preferredVersion"]["groupVersion"])

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return await self.request("GET", resource, namespace=namespace, name=name)

    async def create(self, resource: Resource, body: Object) -> Object:
        namespace = body["metadata"].get("namespace")
        return await self.request("POST", resource, namespace=namespace, body=body)

    async def replace(self, resource: Resource, body: Object) -> Object:
        """PUT ``body``; with ``metadata.resourceVersion`` set this is an optimistic-lock update (409)."""
        meta = body["metadata"]
        return await self.request(
            "PUT", resource, namespace=meta.get("namespace"), name=meta["name"], body=body
        )

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object | list[Object],
        *,
        namespace: str | None = None,
        subresource: str = "",
        patch_type: PatchType = "merge",
    ) -> Object:
        """Patch ``name``; put ``metadata.resourceVersion`` in a merge patch to make it conditional (409)."""
        return await self.request(
            "PATCH",
            resource,
            namespace=namespace,
            name=name,
            subresource=subresource,
            body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type],
        )

    async def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return await self.request("DELETE", resource, namespace=namespace, name=name)

    @asynccontextmanager
    async def watch(
        self, resource: Resource, *, namespace: str | None, params: dict[str, str], read_timeout: float
    ) -> AsyncIterator[AsyncIterator[Object]]:
        """Open a watch and yield its events (decoded JSON lines) until the server ends the stream."""
        what = f"watching {resource.plural} {_display(namespace, '')}".rstrip()
        timeout = httpx.Timeout(self.request_timeout, read=read_timeout)
        with translate(what):
            async with self._api.call_api(
                "GET",
                version=resource.api_version,
                namespace=namespace if resource.namespaced else None,
                url=resource.plural,
                params={**params, "watch": "true"},
                stream=True,
                timeout=timeout,
            ) as response:
                yield _events(response, what)


class ReadOnlyClient(Client):
    async def request(self, method: str, resource: Resource, **kwargs: Any) -> Object:
        if method != "GET":
            raise ApiError(f"{method} {resource.plural}: refused, this client only reads")
        return await super().request(method, resource, **kwargs)


async def _events(response: httpx.Response, what: str) -> AsyncIterator[Object]:
    async for line in response.aiter_lines():
        if not line.strip():
            continue
        try:
            event: Object = json.loads(line)
        except json.JSONDecodeError as error:
            raise ApiError(f"{what}: undecodable event {line[:200]!r}") from error
        yield event


def _display(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace and name else namespace or name
