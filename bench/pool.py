"""`python -m bench.pool --kubeconfig PATH [--open C] [--requests N] [--repeat R]`: what a full connection
pool costs each request.

C short watches at once (each held 3 s by the API server) open as many connections as the client's pool
lets them; they stay open, idle, as a fleet scale-up's burst leaves them. Then N GETs at once; it prints
the pool's size and the median process CPU of R rounds. Run it with `PYTHONPATH=<other checkout>/operator`
to compare two versions of `kapstan.kube.client` side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from kapstan.kube.client import Client
from kapstan.kube.kinds import NAMESPACES

HELD = {"watch": "1", "timeoutSeconds": "3"}


async def open_connections(client: Client, count: int) -> None:
    """Hold ``count`` requests open at once (watches the API server ends after 3 s): the pool keeps
    the connections they opened, idle, for its keep-alive."""

    async def held() -> None:
        async with client.watch(NAMESPACES, namespace=None, params=HELD, read_timeout=10.0) as events:
            async for _ in events:
                pass

    await asyncio.gather(*(held() for _ in range(count)))


async def _bench(kubeconfig: str, open_connections_count: int, requests: int, repeat: int) -> None:
    client = await Client.connect(kubeconfig)
    await client.get(NAMESPACES, "default")  # the session, made once, before the burst

    await open_connections(client, open_connections_count)
    rounds = []
    for _ in range(repeat):
        start = time.process_time()
        await asyncio.gather(*(client.get(NAMESPACES, "default") for _ in range(requests)))
        rounds.append(time.process_time() - start)
    cpu = statistics.median(rounds)
    print(
        f"{_connections(client)} connections open, {requests} GETs at once x {repeat}: median {cpu:.2f} s CPU "
        f"({cpu / requests * 1e3:.2f} ms a request)"
    )


def _connections(client: Client) -> int:
    """How many connections the client's httpx pool holds (httpx's and kr8s's internals: a bench only)."""
    session = client._api._session
    return len(session._transport._pool.connections)  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--open", type=int, default=256)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(_bench(args.kubeconfig, args.open, args.requests, args.repeat))


if __name__ == "__main__":
    main()
