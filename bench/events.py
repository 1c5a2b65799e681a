"""`python -m bench.events --kubeconfig PATH [--events N] [--burst B] [--repeat R] [--profile FILE]`: what
writing noted Events costs the operator's event loop.

First B requests held open at once open as many connections as the client's pool lets them (a fleet's
launches and evictions do so in the operator; they stay open for the pool's keep-alive). Then N Events (one per
made-up pod, as a batch's ``Nominated`` Events are) are noted on one EventRecorder and flushed to a real
API server (the sandbox's); it prints the median wall time and the process CPU time of R rounds, and
with ``--profile`` writes a cProfile of the last round. Run it with
`PYTHONPATH=<other checkout>/operator` to compare two versions side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import time
import uuid

from bench.pool import open_connections
from kapstan.kube.client import Client
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NAMESPACES


async def _round(client: Client, namespace: str, events: int) -> tuple[float, float]:
    recorder = EventRecorder(client, "bench")
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": namespace, "uid": str(uuid.uuid4())},
        }
        for i in range(events)
    ]
    wall, cpu = time.perf_counter(), time.process_time()
    for pod in pods:
        recorder.note(pod, "Normal", "Nominated", "Pod should schedule on: nodeclaim/bench-x")
    await recorder.flush()
    return time.perf_counter() - wall, time.process_time() - cpu


async def _bench(kubeconfig: str, events: int, burst: int, repeat: int, profile: str | None) -> None:
    client = await Client.connect(kubeconfig)
    namespace = f"bench-events-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    try:
        await open_connections(client, burst)
        rounds = []
        for index in range(repeat):
            profiler = cProfile.Profile()
            if profile is not None and index == repeat - 1:
                profiler.enable()
                rounds.append(await _round(client, namespace, events))
                profiler.disable()
                profiler.dump_stats(profile)
            else:
                rounds.append(await _round(client, namespace, events))
    finally:
        await client.delete(NAMESPACES, namespace)
    wall = statistics.median(r[0] for r in rounds)
    cpu = statistics.median(r[1] for r in rounds)
    print(
        f"{events} events x {repeat} after {burst} connections opened: median {wall:.2f} s wall, {cpu:.2f} s CPU "
        f"({cpu / events * 1e3:.2f} ms CPU an event)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args()
    asyncio.run(_bench(args.kubeconfig, args.events, args.burst, args.repeat, args.profile))


if __name__ == "__main__":
    main()
