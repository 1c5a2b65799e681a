"""Builds the sandbox's binaries from Go modules into a versioned cache.

The sandbox needs etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, the Cluster API
core manager, our test CAPI provider and controller-gen. All come from the Go module proxy through the
modules in ``sandbox/`` at the repo root, built with one ``go build`` so that their shared dependencies
compile once. Results land in ``~/.cache/kapstan/sandbox/<key>/``, where the key names the pinned
versions and hashes our sources, so a warm cache costs nothing and a change to our provider rebuilds.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KUBERNETES_VERSION = "v1.36.3"
CLUSTER_API_VERSION = "v1.14.2"
# controller-gen as pinned by that Cluster API release's Makefile.
CONTROLLER_TOOLS_VERSION = "v0.21.0"
# The CAPI API packages whose CRDs the sandbox installs (v1beta2 only: the storage version, and the one
# kapstan writes). core: Cluster, ClusterClass, MachineDeployment, MachineSet, Machine, MachinePool,
# MachineHealthCheck, MachineDrainRule; addons: ClusterResourceSet(+Binding); kubeadm bootstrap configs;
# runtime: ExtensionConfig; ipam: IPAddress(Claim). The core manager knows all of them.
CAPI_API_PACKAGES = (
    "sigs.k8s.io/cluster-api/api/core/v1beta2",
    "sigs.k8s.io/cluster-api/api/addons/v1beta2",
    "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2",
    "sigs.k8s.io/cluster-api/api/runtime/v1beta2",
    "sigs.k8s.io/cluster-api/api/ipam/v1beta2",
)

# The core manager's defaulting and validating webhooks: a real management cluster has them registered,
# and they shape what the API server accepts (e.g. MachineDeployment defaults, ClusterClass rules).
CAPI_WEBHOOK_PACKAGE = "sigs.k8s.io/cluster-api/core/webhooks/admission"


class BuildError(RuntimeError):
    """The Go toolchain or a generator failed; the message carries its output."""


@dataclass(frozen=True)
class Artifacts:
    """Paths of one complete build in the cache."""

    root: Path

    @property
    def sandbox(self) -> Path:
        """The multi-call binary: etcd, kube-*, kwok, capt (our provider), certs, kwok-config."""
        return self.root / "bin" / "kapstan-sandbox"

    @property
    def capi_manager(self) -> Path:
        return self.root / "bin" / "capi-manager"

    @property
    def controller_gen(self) -> Path:
        return self.root / "bin" / "controller-gen"

    @property
    def capi_crds(self) -> Path:
        return self.root / "crds" / "cluster-api"

    @property
    def capi_webhooks(self) -> Path:
        """Admission webhook configurations of the core manager (service refs; rewritten to URLs at up)."""
        return self.root / "crds" / "webhooks" / "manifests.yaml"

    @property
    def provider_crds(self) -> Path:
        return self.root / "crds" / "provider.yaml"

    @property
    def kwok_config(self) -> Path:
        return self.root / "kwok.yaml"

    @property
    def complete(self) -> bool:
        return (self.root / "complete").exists()


def source_dir() -> Path:
    """The ``sandbox/`` Go modules: next to the package in a checkout, or named by KAPSTAN_SANDBOX_SRC."""
    env = os.environ.get("KAPSTAN_SANDBOX_SRC")
    path = Path(env) if env else Path(__file__).resolve().parents[3] / "sandbox"
    if not (path / "go.mod").exists():
        raise BuildError(
            f"sandbox sources not found at {path} (set KAPSTAN_SANDBOX_SRC to the repo's sandbox/)"
        )
    return path


def cache_root() -> Path:
    env = os.environ.get("KAPSTAN_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kapstan"
    return base / "sandbox"


def _source_hash(src: Path) -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())  # this script decides what is generated
    files = sorted(p for p in src.rglob("*") if p.is_file() and p.suffix in {".go", ".mod", ".sum", ".yaml"})
    for path in files:
        digest.update(str(path.relative_to(src)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def artifacts(src: Path | None = None) -> Artifacts:
    """Where the build for the current sources lives (built or not)."""
    src = src or source_dir()
    key = f"k8s-{KUBERNETES_VERSION}_capi-{CLUSTER_API_VERSION}_{_source_hash(src)}"
    return Artifacts(cache_root() / key)


def _log(msg: str) -> None:
    print(f"[kapstan build] {msg}", file=sys.stderr, flush=True)


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    # A non-login shell (CI, an IDE) may lack the usual Go install location on PATH.
    if shutil.which("go") is None and Path("/usr/local/go/bin/go").exists():
        env["PATH"] = f"/usr/local/go/bin{os.pathsep}{env.get('PATH', '')}"
    # Pure-Go binaries; also pins the build-cache key, so every caller of this script shares one cache.
    env["CGO_ENABLED"] = "0"
    return env


def _ldflags() -> str:
    """Strip symbols, and stamp the versions the release builds stamp (the API server reports its version
    from these variables; the Cluster API manager refuses a server that reports none)."""
    major, minor, _ = KUBERNETES_VERSION.lstrip("v").split(".")
    stamps = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{name}={value}" for name, value in stamps.items()]
    flags.append(f"-X sigs.k8s.io/cluster-api/version.gitVersion={CLUSTER_API_VERSION}")
    return " ".join(flags)


def _go_build(cwd: Path, out_dir: Path, packages: list[str]) -> None:
    """One ``go build -v`` of several main packages, counting compiled packages as progress."""
    env = _go_env()
    go = shutil.which("go", path=env["PATH"]) or "go"
    listing = subprocess.run(
        [go, "list", "-deps", *packages], cwd=cwd, env=env, capture_output=True, text=True
    )
    if listing.returncode != 0:
        raise BuildError(f"go list failed in {cwd}:\n{listing.stderr}")
    total = len(listing.stdout.split())
    cmd = [go, "build", "-v", "-trimpath", f"-ldflags={_ldflags()}", "-o", str(out_dir) + "/", *packages]
    _log(f"{' '.join(cmd)}  (in {cwd}; {total} packages, already-cached ones are not listed)")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    tail: list[str] = []
    done = 0
    started = time.monotonic()
    for line in proc.stderr:
        line = line.rstrip()
        tail = [*tail[-40:], line]
        if line and not line.startswith(("go:", "#", " ", "\t")):
            done += 1
            if done % 50 == 0:
                _log(f"compiled {done}/{total} packages ({time.monotonic() - started:.0f}s): {line}")
    if proc.wait() != 0:
        raise BuildError("go build failed:\n" + "\n".join(tail))


def build(force: bool = False) -> Artifacts:
    """Build everything the sandbox needs unless the cache already has it.

    Builds of one cache are serialized with a file lock: two test runs (or a test run and the demo)
    starting together would otherwise write into the same staging folder.
    """
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(force)


def _build_locked(force: bool) -> Artifacts:
    src = source_dir()
    art = artifacts(src)
    if art.complete and not force:
        (art.root / "complete").touch()  # used now: a build of other sources keeps it (``_prune``)
        _log(f"cached: {art.root}")
        return art
    if shutil.which("go", path=_go_env()["PATH"]) is None:
        raise BuildError("the Go toolchain is required (go 1.26 or newer on PATH)")
    started = time.monotonic()
    staging = art.root.with_name(art.root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    _log(f"building Kubernetes {KUBERNETES_VERSION}, Cluster API {CLUSTER_API_VERSION} into {art.root}")
    _go_build(src, staging / "bin", ["./cmd/kapstan-sandbox", "sigs.k8s.io/cluster-api/core"])
    (staging / "bin" / "core").rename(staging / "bin" / "capi-manager")
    _go_build(src / "tools", staging / "bin", ["sigs.k8s.io/controller-tools/cmd/controller-gen"])
    _generate(src, staging)
    if art.root.exists():
        shutil.rmtree(art.root)
    staging.rename(art.root)
    (art.root / "complete").write_text(f"{time.monotonic() - started:.0f}s\n")
    _prune(art.root)
    _log(f"done in {time.monotonic() - started:.0f}s: {art.root}")
    return art


UNUSED_FOR = 24 * 3600.0
"""Seconds since a build was last used (its ``complete`` marker, touched on each cache hit) after which a
build of other sources drops it (~250 MB each; the Go build cache keeps rebuilding it cheap). Dropping
every other build at once, as it did, took the binaries from under the sandboxes and test runs of the other
checkouts sharing the cache: two branches with different provider sources removed each other's build on
each run."""


def _prune(keep: Path, now: float | None = None) -> None:
    """Drop the builds of other keys not used for ``UNUSED_FOR`` (and unfinished ones as old)."""
    now = time.time() if now is None else now
    for other in keep.parent.iterdir():
        if other == keep or not other.is_dir():
            continue
        marker = other / "complete"
        used = (marker if marker.exists() else other).stat().st_mtime
        if now - used > UNUSED_FOR:
            shutil.rmtree(other, ignore_errors=True)


def _generate(src: Path, staging: Path) -> None:
    """CRDs (Cluster API's from its API module, ours from the binary) and the kwok stage config."""
    art = Artifacts(staging)
    art.capi_crds.mkdir(parents=True)
    _log("generating the Cluster API CRDs with controller-gen")
    for args in (
        ["crd", *(f"paths={p}" for p in CAPI_API_PACKAGES), f"output:crd:dir={art.capi_crds}"],
        ["webhook", f"paths={CAPI_WEBHOOK_PACKAGE}", f"output:webhook:dir={art.capi_webhooks.parent}"],
    ):
        gen = subprocess.run(
            [str(art.controller_gen), *args], cwd=src, env=_go_env(), capture_output=True, text=True
        )
        if gen.returncode != 0:
            raise BuildError(f"controller-gen {args[0]} failed:\n{gen.stdout}\n{gen.stderr}")
    for out, args in ((art.provider_crds, ["capt", "--print-crds"]), (art.kwok_config, ["kwok-config"])):
        res = subprocess.run([str(art.sandbox), *args], capture_output=True, text=True)
        if res.returncode != 0:
            raise BuildError(f"kapstan-sandbox {' '.join(args)} failed:\n{res.stderr}")
        out.write_text(res.stdout)


def main() -> None:
    """``python -m kapstan.local.build``: build (or find) the sandbox binaries and print where they are."""
    force = "--force" in sys.argv[1:]
    try:
        art = build(force=force)
    except BuildError as err:
        sys.exit(f"kapstan build: {err}")
    print(art.root)


if __name__ == "__main__":
    main()
