"""`python -m bench.run --render-only --peers`: REPORT.md is rewritten with the peers' aims and costs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_render_only_with_peers_appends_their_section(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report's plots need matplotlib (pip install -e '.[bench]')")
    pytest.importorskip("scipy", reason="bench.run imports the bound's LP (pip install -e '.[bench]')")
    from bench import run

    for name in ("results.json", "peers.json"):
        shutil.copy(BENCH / name, tmp_path / name)
    assert run.main(["--render-only", "--peers", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "REPORT.md").read_text()
    assert report.index("## Peers") > report.index("## Results")
    peers = json.loads((tmp_path / "peers.json").read_text())
    # Every aim of the peers' run is in the kapstan report, with its status.
    for aim in peers["aims"]:
        assert aim["aim"] in report
    assert (
        "| workload | bound $/h | rust | python | karpenter | upstream-capi | cluster-autoscaler |" in report
    )
    assert (tmp_path / "PEERS.md").is_file() and (tmp_path / "peers_cost.png").is_file()
