"""`kapstan bench`: the packaged workloads at a chosen size, on both engines, with pods/s and cost/bound."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from kapstan.bench.workloads import FAMILIES, WORKLOADS, sized
from kapstan.cli import main
from kapstan.cli_bench import BOUND_NEEDS
from kapstan.scheduling import ENGINES


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "article"])
def test_a_family_is_built_at_the_size_asked(family: str) -> None:
    (workload,) = sized(family, 37)
    assert workload.name == f"{family}-37"
    assert len(workload.build().pods) == 37


def test_the_reports_registry_keeps_its_workloads() -> None:
    assert list(WORKLOADS)[:2] == ["article-8x1cpu", "article-3cpu"]
    assert {"mix-20000", "generic-5000", "prefs-4000", "capi-200"} <= set(WORKLOADS)
    assert WORKLOADS["prefs-4000"].pods == len(WORKLOADS["prefs-4000"].build().pods) == 4000


def _rows(output: str) -> dict[tuple[str, str], list[str]]:
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) > 2 and cells[1] in ENGINES:
            rows[(cells[0], cells[1])] = cells
    return rows


def test_bench_prints_speed_cost_and_cost_over_the_bound_for_every_engine() -> None:
    result = CliRunner().invoke(
        main, ["bench", "--family", "generic", "--family", "article", "--pods", "120"]
    )
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "workload" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == [
        "workload", "engine", "pods", "median s", "pods/s", "nodes", "unsched", "$/h", "cost/bound", "valid",
    ]  # fmt: skip
    rows = _rows(result.output)
    names = ("generic-120", "article-8x1cpu", "article-3cpu")
    assert set(rows) == {(name, engine) for name in names for engine in ENGINES}
    pods_of = {"generic-120": 120, "article-8x1cpu": 8, "article-3cpu": 1}
    for (name, _), (_, _, pods, seconds, rate, nodes, unsched, _, ratio, valid) in rows.items():
        assert int(pods) == pods_of[name]
        assert float(seconds) > 0 and float(rate.replace(",", "")) > 0
        assert int(nodes) >= 1 and unsched == "0" and valid == "yes"
        assert float(ratio) >= 0.999  # a plan never beats a proven lower bound
    # The twins return the same plan, so the same price.
    for name in names:
        assert len({rows[(name, engine)][7] for engine in ENGINES}) == 1
    assert rows[("article-8x1cpu", "rust")][7] == "14.66"  # one c3-16 and one c3-4


def test_bench_without_the_bound_has_no_cost_over_bound_column() -> None:
    result = CliRunner().invoke(
        main, ["bench", "--family", "capi", "--pods", "30", "--engine", "rust", "--repeat", "1", "--no-bound"]
    )
    assert result.exit_code == 0, result.output
    assert "cost/bound" not in result.output
    assert set(_rows(result.output)) == {("capi-30", "rust")}


def test_bench_without_scipy_says_how_to_get_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kapstan.bench.bounds", None)  # as if the bench extra were missing
    result = CliRunner().invoke(main, ["bench", "--family", "article", "--engine", "rust", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    assert BOUND_NEEDS in result.output
    assert "cost/bound" not in result.output.replace(BOUND_NEEDS, "")
    assert set(_rows(result.output)) == {("article-8x1cpu", "rust"), ("article-3cpu", "rust")}
