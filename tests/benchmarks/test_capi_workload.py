"""The CAPI catalog family (issue 17): general-purpose, CPU-optimised and memory-optimised flavors whose
prices differ per vCPU and per GiB. The lower bound buys a mix of b3 and c3 flavors matching the pods'
CPU to memory ratio; the mixed-flavor move of the cost pass must get capi-200, capi-1000 and capi-5000
within 2% of it."""

from __future__ import annotations

import pytest
from bound_helpers import solve_within_bound

from kapstan.bench.workloads import capi_catalog


@pytest.mark.parametrize("pods", [200, 1000, 5000])
def test_capi_costs_within_two_percent_of_the_bound(engine: str, pods: int) -> None:
    solve_within_bound(capi_catalog(pods), engine, ratio=1.02)
