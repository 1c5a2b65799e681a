"""``kapstan report`` on a fake cluster: a node of a hand-scaled c3-16 MachineDeployment holding two small
pods costs 12/h; kapstan would run them on one c3-4 of the article's NodePool for 3/h. The page draws the
same numbers as bars. And the live commands' input errors: no source, both sources, a missing kubeconfig,
a cluster without kapstan's CRDs, each one line."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from controllers.fake_cluster import World, world
from kapstan.api.wellknown import INSTANCE_TYPE, ZONE
from kapstan.catalog.catalog import DEFAULT_ZONE
from kapstan.cli import main
from kapstan.controllers.state import ClusterRef
from kapstan.kube.client import Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODES
from kapstan.whatif import live
from kapstan.whatif.html import render_html
from kapstan.whatif.live import view_of
from kapstan.whatif.report import NO_NODEPOOL, Row, build_report

SVG = "{http://www.w3.org/2000/svg}"
XHTML = "{http://www.w3.org/1999/xhtml}"


def _cluster_with_a_big_node() -> World:
    made = world({"md-c3-4": "c3-4", "md-c3-16": "c3-16"})
    made.machine("m-1", "test://big", md="md-c3-16")
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "big", "labels": {INSTANCE_TYPE: "c3-16", ZONE: DEFAULT_ZONE}},
        "spec": {"providerID": "test://big"},
        "status": {
            "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    made.api.put(NODES, node)
    for name in ("a", "b"):
        pod = made.pod(name, "big")
        pod["metadata"]["labels"] = {"kapstan.dev/run": "unit"}
        pod["spec"]["nodeSelector"] = {"kapstan.dev/run": "unit"}
        pod["spec"]["containers"] = [
            {"name": "app", "image": "app", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}
        ]
    # The unrelated node (no Machine of the Cluster) is neither counted nor replaced.
    made.api.put(
        NODES, {**node, "metadata": {"name": "other", "labels": dict(node["metadata"]["labels"])}, "spec": {}}
    )
    return made


def test_the_report_prices_managed_nodes_now_against_a_plan_from_scratch() -> None:
    made = _cluster_with_a_big_node()
    report = build_report(asyncio.run(view_of(made.state, "python")))
    assert report.rows == [
        Row(NO_NODEPOOL, "c3-16", nodes_now=1, price_now=12.0),
        Row("default", "c3-4", nodes_planned=1, price_planned=3.0),
    ]
    assert (report.total_now, report.total_planned, report.saving) == (12.0, 3.0, 9.0)
    assert report.unplaced == {}


def test_the_page_is_self_contained_and_its_bars_are_the_prices() -> None:
    made = _cluster_with_a_big_node()
    report = build_report(asyncio.run(view_of(made.state, "rust")))
    page = render_html(report, "kapstan report: Cluster capi/kapstan")
    assert page.startswith("<!DOCTYPE html>\n")
    root = ET.fromstring(page.split("\n", 1)[1])
    assert not [e for e in root.iter() if e.tag in (f"{XHTML}script", f"{XHTML}link", f"{XHTML}img")]
    (svg,) = root.iter(f"{SVG}svg")
    bars = {
        (r.get("data-group"), r.get("data-side")): r for r in svg.iter(f"{SVG}rect") if r.get("data-side")
    }
    assert set(bars) == {
        (group, side) for group in ("- c3-16", "default c3-4", "total") for side in ("now", "kapstan")
    }
    heights = {key: float(rect.get("height", "0")) for key, rect in bars.items()}
    # One price scale: the tallest bar is the largest price, the others in proportion.
    assert heights[("total", "now")] == max(heights.values()) > 0
    assert abs(heights[("default c3-4", "kapstan")] / heights[("- c3-16", "now")] - 3.0 / 12.0) < 1e-3
    assert heights[("default c3-4", "now")] == 0.0
    cells = [[td.text for td in tr.iter(f"{XHTML}td")] for tr in root.iter(f"{XHTML}tr")]
    assert ["total", None, None, "12.0000", None, "3.0000"] in cells
    summary = "".join(next(p for p in root.iter(f"{XHTML}p")).itertext())
    assert "saving 9.0000/h (75.0%)" in summary


def test_simulate_wants_manifests_or_a_cluster_and_names_a_missing_kubeconfig(tmp_path: Path) -> None:
    runner = CliRunner()
    neither = runner.invoke(main, ["simulate"])
    assert neither.exit_code == 2
    assert "give manifests with -f, or a running cluster with --cluster NAMESPACE/NAME" in neither.stderr
    both = runner.invoke(main, ["simulate", "-f", str(tmp_path), "--cluster", "ns/c"])
    assert both.exit_code == 2
    assert "not both" in both.stderr
    missing = runner.invoke(main, ["report", "--cluster", "ns/c", "--kubeconfig", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert missing.stderr == f"error: --kubeconfig: no kubeconfig at {tmp_path / 'nope'}\n"


class _NoKarpenterCrds:
    """A cluster that never ran kapstan: every list answers, except the karpenter.sh kinds (404)."""

    def read_only(self) -> _NoKarpenterCrds:
        return self

    async def request(self, method: str, resource: Resource, **_: Any) -> dict[str, Any]:
        if resource.group == "karpenter.sh":
            raise ApiError(
                f"{method} {resource.plural}: the server could not find the requested resource", status=404
            )
        return {"items": [], "metadata": {"resourceVersion": "1"}}


def test_a_cluster_without_the_crds_is_told_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _NoKarpenterCrds()

    async def connected(options: object) -> tuple[object, object]:
        return fake, fake

    monkeypatch.setattr(live, "connect", connected)
    with pytest.raises(
        ValueError, match=r"install kapstan's CRDs \(`kapstan render crds \| kubectl apply -f -`\)"
    ):
        asyncio.run(live.read_cluster(ClusterRef("ns", "c"), None, None, None))
