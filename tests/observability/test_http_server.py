"""The /metrics, /healthz and /readyz endpoint over real sockets, with raw HTTP/1.1 requests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from prometheus_client.parser import text_string_to_metric_families

from kapstan.observability import metrics
from kapstan.observability.server import bound_port, serve


async def _request(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    response = await reader.read()  # the server closes the connection after one response
    writer.close()
    await writer.wait_closed()
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in header_lines)}
    return int(status_line.split(" ")[1]), headers, body


async def _get(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    return await _request(port, f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())


def _with_server(ready: Callable[[], bool], body: Callable[[int], Awaitable[None]]) -> None:
    async def scenario() -> None:
        server = await serve("127.0.0.1", 0, ready)
        try:
            await body(bound_port(server))
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(scenario())


def test_metrics_endpoint_serves_the_registry() -> None:
    metrics.NODECLAIMS_CREATED.labels(metrics.REASON_PROVISIONED, "http").inc()

    async def body(port: int) -> None:
        status, headers, payload = await _get(port, "/metrics")
        assert status == 200
        assert headers["content-type"].startswith("text/plain; version=")
        assert int(headers["content-length"]) == len(payload)
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(payload.decode())
            for s in family.samples
        }
        key = ("karpenter_nodeclaims_created_total", (("nodepool", "http"), ("reason", "provisioned")))
        assert samples[key] >= 1

    _with_server(lambda: True, body)


def test_health_and_readiness_follow_the_ready_callback() -> None:
    state = {"ready": False}

    async def body(port: int) -> None:
        assert (await _get(port, "/healthz"))[::2] == (200, b"ok\n")
        status, _, payload = await _get(port, "/readyz")
        assert (status, payload) == (503, b"not ready\n")
        state["ready"] = True
        assert (await _get(port, "/readyz?verbose"))[::2] == (200, b"ok\n")

    _with_server(lambda: state["ready"], body)


def test_a_failing_readiness_check_reads_as_not_ready_with_the_reason() -> None:
    def broken() -> bool:
        raise RuntimeError("informers not synced")

    async def body(port: int) -> None:
        status, _, payload = await _get(port, "/readyz")
        assert status == 503
        assert payload == b"not ready: RuntimeError: informers not synced\n"
        assert (await _get(port, "/healthz"))[0] == 200, "the server keeps serving"

    _with_server(broken, body)


def test_unknown_paths_methods_and_garbage() -> None:
    async def body(port: int) -> None:
        assert (await _get(port, "/"))[0] == 404
        assert (await _get(port, "/metricsx"))[0] == 404
        status, headers, _ = await _get(port, "/metrics", method="POST")
        assert (status, headers["allow"]) == (405, "GET, HEAD")
        status, headers, payload = await _get(port, "/healthz", method="HEAD")
        assert (status, headers["content-length"], payload) == (200, "3", b"")
        assert (await _request(port, b"hello\r\n\r\n"))[0] == 400
        # A request head far larger than any probe sends is refused, not buffered.
        huge = b"GET /healthz HTTP/1.1\r\nX-Pad: " + b"a" * 20_000 + b"\r\n\r\n"
        assert (await _request(port, huge))[0] == 431
        # A client that disconnects mid-request leaves the server serving.
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /heal")
        writer.close()
        await writer.wait_closed()
        assert (await _get(port, "/healthz"))[0] == 200

    _with_server(lambda: True, body)


def test_concurrent_scrapes_and_probes() -> None:
    async def body(port: int) -> None:
        results = await asyncio.gather(
            *(_get(port, path) for path in ["/metrics", "/healthz", "/readyz"] * 10)
        )
        assert [status for status, _, _ in results] == [200] * 30

    _with_server(lambda: True, body)
