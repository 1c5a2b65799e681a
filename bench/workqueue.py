"""`python -m bench.workqueue [--workers W] [--keys N] [--repeat R]`: CPU the work queue costs its loop.

W idle workers wait on one queue while N keys arrive one at a time, as informer events do, each reconcile
yielding once. It prints the median CPU of R runs. Run it with `PYTHONPATH=<other checkout>/operator` to
compare two versions of `kapstan.kube.workqueue` side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from kapstan.kube.workqueue import ShutDown, WorkQueue

YIELDS_BETWEEN_KEYS = 3
"""Loop turns between two arriving keys: enough for an idle worker to take one and wait again."""


async def _worker(queue: WorkQueue[str]) -> None:
    while True:
        try:
            key = await queue.get()
        except ShutDown:
            return
        await asyncio.sleep(0)
        queue.done(key)


async def _cpu_seconds(workers: int, keys: int) -> float:
    queue: WorkQueue[str] = WorkQueue()
    tasks = [asyncio.ensure_future(_worker(queue)) for _ in range(workers)]
    await asyncio.sleep(0)
    start = time.process_time()
    for index in range(keys):
        queue.add(f"key-{index}")
        for _ in range(YIELDS_BETWEEN_KEYS):
            await asyncio.sleep(0)
    spent = time.process_time() - start
    queue.shut_down()
    await asyncio.gather(*tasks)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runs = [asyncio.run(_cpu_seconds(args.workers, args.keys)) for _ in range(args.repeat)]
    median = statistics.median(runs)
    print(
        f"{args.workers} workers, {args.keys} keys: median {median * 1000:.0f} ms CPU "
        f"({median / args.keys * 1e6:.1f} us a key) over {args.repeat} runs"
    )


if __name__ == "__main__":
    main()
