"""The build script: pinned versions in the binaries, and a warm cache that costs nothing."""

from __future__ import annotations

import subprocess
import time

from kapstan.local.build import CLUSTER_API_VERSION, KUBERNETES_VERSION, build


def test_warm_build_is_a_cache_hit_with_pinned_versions() -> None:
    art = build()  # may build (cold) or find the cache
    started = time.monotonic()
    assert build() == art
    assert time.monotonic() - started < 10, "a second build must be a cache hit"

    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        out = subprocess.run(
            [str(art.sandbox), component, "--version"], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == f"Kubernetes {KUBERNETES_VERSION}"
    etcd = subprocess.run([str(art.sandbox), "etcd", "--version"], capture_output=True, text=True, check=True)
    assert "etcd Version: 3.6." in etcd.stdout
    crds = sorted(p.name for p in art.capi_crds.glob("*.yaml"))
    for kind in ("clusters", "clusterclasses", "machinedeployments", "machinesets", "machines"):
        assert f"cluster.x-k8s.io_{kind}.yaml" in crds
    assert "bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml" in crds
    assert "addons.cluster.x-k8s.io_clusterresourcesetbindings.yaml" in crds
    assert CLUSTER_API_VERSION in art.root.name
