"""The Karpenter peer's answer as a plan: the reference providers' cheapest pick and the upstream CAPI
provider's name-first pick, then the real Go peer on a tiny workload when its binary is cached."""

from __future__ import annotations

import pytest
from bench.peers import gobuild
from bench.peers.karpenter import (
    KARPENTER,
    UPSTREAM,
    Claim,
    Option,
    PeerRun,
    cheapest,
    name_first,
    run_peer,
    to_plan,
)

from kapstan.bench.workloads import article_big_pod, article_inflate
from kapstan.scheduling.model import ZONE
from kapstan.scheduling.validator import validate

C3 = (
    Option("c3-4", 2 + 1.0, "nova", "on-demand"),
    Option("c3-8", 4 + 2.0, "nova", "on-demand"),
    Option("c3-16", 8 + 4.0, "nova", "on-demand"),
)


def test_upstream_rule_takes_the_first_name_not_the_cheapest() -> None:
    # "c3-16" sorts before "c3-4" and "c3-8": the article's 3-vCPU pod on an 8-vCPU flavor.
    assert name_first(C3[1:]).name == "c3-16"
    assert name_first(C3).name == "c3-16"
    assert cheapest(C3[1:]).name == "c3-8"


def _big_pod_run() -> PeerRun:
    snapshot = article_big_pod()
    flavors = {it.name: it for it in snapshot.instance_types}
    # What Karpenter leaves a claim for one 3-CPU pod with: the flavors that hold it, cheapest first.
    options = tuple(Option(n, flavors[n].offerings[0].price, "nova", "on-demand") for n in ("c3-8", "c3-16"))
    claim = Claim("default", ("default/big",), options, {ZONE: "nova"})
    return PeerRun((claim,), {}, (0.01,), (0.1,), "v1.14.1", "go1.26.8")


def test_plans_from_one_run_price_each_rule_and_validate() -> None:
    snapshot = article_big_pod()
    karpenter = to_plan(_big_pod_run(), snapshot, KARPENTER, cheapest)
    upstream = to_plan(_big_pod_run(), snapshot, UPSTREAM, name_first)
    assert [c.instance_type for c in karpenter.node_claims] == ["c3-8"]
    assert [c.instance_type for c in upstream.node_claims] == ["c3-16"]
    # c3-8: 4 vCPU + 8 GB / 4 GiB; c3-16 twice that.
    assert karpenter.total_price_per_hour == pytest.approx(4 + 8e9 / 2**30 / 4)
    assert upstream.total_price_per_hour == pytest.approx(2 * karpenter.total_price_per_hour)
    assert validate(snapshot, karpenter) == []
    assert validate(snapshot, upstream) == []


_BINARY = gobuild.cached("karpenter")


@pytest.mark.skipif(
    _BINARY is None,
    reason="the Karpenter peer is not built for these sources; `python -m bench.peers` builds and caches it "
    "(a cold Go build takes about 12 minutes on 2 cores, too long for the test suite)",
)
def test_the_go_peer_packs_the_articles_pods_like_karpenter() -> None:
    assert _BINARY is not None
    big = article_big_pod()
    run = run_peer(_BINARY.path, big, "article-3cpu", 1, zero_prices=False)
    assert run.version == "v1.14.1" and len(run.solve_seconds) == 1
    assert [c.pods for c in run.claims] == [("default/big",)]
    # The 3-CPU pod (plus the 100m agent) fits c3-8 and c3-16, not c3-4; c3-8 is the cheaper.
    assert [o.name for o in run.claims[0].options] == ["c3-8", "c3-16"]
    plan = to_plan(run, big, KARPENTER, cheapest)
    assert plan.total_price_per_hour == pytest.approx(4 + 8e9 / 2**30 / 4)
    assert validate(big, plan) == []

    inflate = article_inflate()
    zero = run_peer(_BINARY.path, inflate, "article-8x1cpu", 1, zero_prices=True)
    upstream = to_plan(zero, inflate, UPSTREAM, name_first)
    assert sorted(p for c in upstream.node_claims for p in c.pods) == sorted(p.key for p in inflate.pods)
    assert {c.instance_type for c in upstream.node_claims} == {"c3-16"}
    assert validate(inflate, upstream) == []


def test_the_peer_reports_the_karpenter_version_it_requires() -> None:
    module = gobuild.HERE / "karpenter"
    required = next(
        line.split()[-1]
        for line in (module / "go.mod").read_text().splitlines()
        if line.strip().startswith("sigs.k8s.io/karpenter ")
    )
    assert f'const karpenterVersion = "{required}"' in (module / "main.go").read_text()
