"""Objects read by reference through a TTL cache, for kinds no informer watches.

Infrastructure machine templates have a kind per provider (found through discovery), and CAPI templates are
immutable by convention, so a short TTL costs nothing and a rollout to a new template is a new name. Price
ConfigMaps are read the same way: a change shows within the TTL.
"""

from __future__ import annotations

from cachetools import TTLCache

from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError

TEMPLATE_TTL = 300.0  # seconds


class TemplateCache:
    """Infrastructure machine templates and ConfigMaps by reference, read through a TTL cache."""

    def __init__(self, client: Client, ttl: float = TEMPLATE_TTL, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._client = client
        self._objects: TTLCache[tuple[str, str, str, str], Object | None] = TTLCache(
            maxsize=1024, ttl=ttl, timer=clock.now
        )
        self._kinds: TTLCache[str, dict[str, Resource]] = TTLCache(maxsize=64, ttl=ttl, timer=clock.now)

    async def get(self, api_group: str, kind: str, namespace: str, name: str) -> Object | None:
        key = (api_group, kind, namespace, name)
        if key in self._objects:
            return self._objects[key]
        resource = await self._resource(api_group, kind)
        found: Object | None = None
        if resource is not None:
            try:
                found = await self._client.get(resource, name, namespace)
            except ApiError as error:
                if not error.not_found:
                    raise
        self._objects[key] = found
        return found

    async def _resource(self, api_group: str, kind: str) -> Resource | None:
        if api_group not in self._kinds:
            try:
                version = await self._client.preferred_version(api_group) if api_group else "v1"
                self._kinds[api_group] = await self._client.resources(version)
            except ApiError as error:
                if not error.not_found:
                    raise
                self._kinds[api_group] = {}
        return self._kinds[api_group].get(kind)
