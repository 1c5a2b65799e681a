#!/bin/sh
# `make image`: the kapstan OCI image, built from Debian's and PyPI's packages without Docker.
#
#   1. the wheel: maturin builds kapstan (Rust core + Python package) from the committed tree (git archive
#      of HEAD, so what is labelled as the source revision is what is inside);
#   2. the root: mmdebstrap's `extract` variant unpacks bookworm's python3.11, the libraries it depends on
#      and dpkg (which that variant always brings, with tar), runs no maintainer scripts and has no shell;
#   3. the Python packages: pip installs the wheels pinned in image/requirements.txt (sha256-checked) and
#      kapstan's wheel into /usr/local/lib/python3.11/dist-packages, the site directory Debian's python3.11
#      reads, for that interpreter's platform;
#   4. the image: one layer, tarred with sorted names, every timestamp at SOURCE_DATE_EPOCH and numeric
#      owners, added with umoci; the config (user 65532, entrypoint the `kapstan` console script, which
#      the Deployments' `command: [kapstan]` also finds on PATH; OCI labels)
#      set with umoci; the layout packed into dist/kapstan-<version>.oci.tar.
#
# SOURCE_DATE_EPOCH defaults to the commit time of HEAD. What is not pinned: the Debian packages are the
# mirror's current bookworm (no snapshot mirror is reachable from the project's machines); their names
# and versions are written to dist/kapstan-<version>.packages.txt and into the image. Same commit, same
# Debian packages, same lock: the same digest (image/README.md says how that was checked).
#
# Usage: image/build.sh [--check-tools]   (IMAGE_REPOSITORY, DEBIAN_MIRROR, SOURCE_DATE_EPOCH, PYTHON)
set -eu

cd "$(dirname "$0")/.."
for tool in mmdebstrap umoci git tar; do
    if ! command -v "$tool" >/dev/null; then
        echo "image/build.sh: $tool is missing; image/install-tools.sh installs the tools (apt-get)" >&2
        exit 2
    fi
done
[ "${1:-}" = "--check-tools" ] && exit 0

PYTHON=${PYTHON:-.venv/bin/python}
PYTHON=$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON") # absolute, still the venv's (no realpath)
VERSION=$("$PYTHON" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
REVISION=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "image/build.sh: uncommitted changes are not in the image (it is built from HEAD $REVISION)" >&2
fi
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
export SOURCE_DATE_EPOCH
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
REPOSITORY=${IMAGE_REPOSITORY:-ghcr.io/kapstan/kapstan}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SOURCE_URL=${IMAGE_SOURCE:-https://github.com/kapstan/kapstan}
NONROOT=65532
SITE=usr/local/lib/python3.11/dist-packages

# A fixed build path (under target/, git-ignored) keeps cargo's incremental state between builds; the
# path is remapped out of the binary so a clone elsewhere builds the same bytes.
BUILD=$PWD/target/image
SRC=$BUILD/src
rm -rf "$SRC" "$BUILD/wheel" "$BUILD/root" "$BUILD/oci" "$BUILD/layer.tar"
mkdir -p "$SRC" "$BUILD/wheel" dist

echo "[image] wheel: maturin on $REVISION" >&2
git archive HEAD | tar -x -C "$SRC"
(
    cd "$SRC"
    RUSTFLAGS="--remap-path-prefix=$SRC=/kapstan --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo" \
    CARGO_TARGET_DIR=$BUILD/cargo \
        "$PYTHON" -m maturin build --release --locked --compatibility off --quiet \
        --interpreter "$PYTHON" --out "$BUILD/wheel" >&2
)
WHEEL=$(ls "$BUILD"/wheel/kapstan-*.whl)

echo "[image] root: bookworm python3.11 from $MIRROR" >&2
mmdebstrap --quiet --variant=extract --include=python3.11 \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --extract-hook='ls "$1"/var/cache/apt/archives | sed -n "s/\.deb$//p" | sort > "$1"/packages.txt' \
    bookworm "$BUILD/root" "$MIRROR"
ROOT=$BUILD/root
mkdir -p "$ROOT/usr/share/kapstan"
mv "$ROOT/packages.txt" "$ROOT/usr/share/kapstan/debian-packages.txt"
# What the extract variant leaves besides the files: apt's state and caches, none of it used at run time.
rm -rf "$ROOT/var/cache" "$ROOT/var/lib/apt" "$ROOT/var/log" "$ROOT/etc/apt" "$ROOT/dev" "$ROOT/proc" \
    "$ROOT/sys" "$ROOT/run"
mkdir -p "$ROOT/dev" "$ROOT/proc" "$ROOT/sys" "$ROOT/run" "$ROOT/tmp" "$ROOT/home/nonroot" "$ROOT/$SITE"
chmod 1777 "$ROOT/tmp"
chown "$NONROOT:$NONROOT" "$ROOT/home/nonroot"
# No base-passwd in an extract root: the two accounts anything may look up (getpass, ~ expansion).
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/usr/sbin/nologin\n' \
    "$NONROOT" "$NONROOT" > "$ROOT/etc/passwd"
printf 'root:x:0:\nnonroot:x:%s:\n' "$NONROOT" > "$ROOT/etc/group"

echo "[image] python packages: image/requirements.txt and the kapstan wheel" >&2
PLATFORM_ARGS=$("$PYTHON" -c 'import runpy; print(" ".join(runpy.run_path("image/lock.py")["PLATFORM_ARGS"]))')
# One pip run, every file hash-checked: the locked wheels and the one just built.
{ cat image/requirements.txt; echo "kapstan @ file://$WHEEL --hash=sha256:$(sha256sum "$WHEEL" | cut -d' ' -f1)"; } \
    > "$BUILD/requirements.txt"
# shellcheck disable=SC2086 # PLATFORM_ARGS is a list of options
"$PYTHON" -m pip install --quiet --no-cache-dir --no-compile --no-deps --require-hashes \
    --target "$ROOT/$SITE" $PLATFORM_ARGS -r "$BUILD/requirements.txt"
# Two records of this machine's paths go: pip's direct_url.json (where the wheel file was) and, in maturin's
# SBOM (dist-info/sboms), the directory the crate was built in, which becomes the path the binary's own
# paths are remapped to above; RECORD follows, so its list and hashes stay true.
"$PYTHON" - "$ROOT/$SITE" "$SRC" <<'EOF'
import base64, hashlib, sys
from pathlib import Path

site, src = Path(sys.argv[1]), sys.argv[2]
(info,) = site.glob("kapstan-*.dist-info")
(info / "direct_url.json").unlink()
rows = [row for row in (info / "RECORD").read_text().splitlines() if not row.startswith(f"{info.name}/direct_url.json,")]
for sbom in sorted((info / "sboms").glob("*.json")):
    data = sbom.read_bytes().replace(src.encode(), b"/kapstan")
    sbom.write_bytes(data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    name = sbom.relative_to(site).as_posix()
    rows = [f"{name},sha256={digest},{len(data)}" if row.split(",")[0] == name else row for row in rows]
(info / "RECORD").write_text("\n".join(rows) + "\n")
EOF
# pip --target puts console scripts in bin/ with this machine's interpreter: keep kapstan's, for the image's
# interpreter, on PATH (the kernel runs it, no shell involved); the others (pygmentize, ...) go.
mkdir -p "$ROOT/usr/local/bin"
sed '1s|^#!.*|#!/usr/bin/python3.11|' "$ROOT/$SITE/bin/kapstan" > "$ROOT/usr/local/bin/kapstan"
chmod 755 "$ROOT/usr/local/bin/kapstan"
rm -rf "$ROOT/$SITE/bin"

echo "[image] layer and config" >&2
tar --create --file "$BUILD/layer.tar" --directory "$ROOT" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$SOURCE_DATE_EPOCH" --numeric-owner --xattrs-exclude='*' .
OCI=$BUILD/oci
umoci init --layout "$OCI"
umoci new --image "$OCI:$VERSION"
umoci raw add-layer --image "$OCI:$VERSION" --history.created "$CREATED" \
    --history.created_by "image/build.sh (mmdebstrap bookworm python3.11, pip, kapstan $VERSION)" \
    "$BUILD/layer.tar"
umoci config --image "$OCI:$VERSION" --created "$CREATED" --no-history \
    --config.user "$NONROOT:$NONROOT" \
    --config.workingdir /home/nonroot \
    --config.entrypoint /usr/local/bin/kapstan \
    --config.cmd --help \
    --config.env PATH=/usr/local/bin:/usr/bin:/bin \
    --config.env PYTHONDONTWRITEBYTECODE=1 --config.env PYTHONUNBUFFERED=1 \
    --config.label "org.opencontainers.image.title=kapstan" \
    --config.label "org.opencontainers.image.description=Node autoscaler for Cluster API that speaks Karpenter's API" \
    --config.label "org.opencontainers.image.version=$VERSION" \
    --config.label "org.opencontainers.image.revision=$REVISION" \
    --config.label "org.opencontainers.image.source=$SOURCE_URL" \
    --config.label "org.opencontainers.image.created=$CREATED" \
    --config.label "org.opencontainers.image.licenses=Apache-2.0" \
    --config.label "org.opencontainers.image.base.name=debian:bookworm (mmdebstrap extract: python3.11)" \
    --manifest.annotation "org.opencontainers.image.version=$VERSION" \
    --manifest.annotation "org.opencontainers.image.revision=$REVISION" \
    --manifest.annotation "org.opencontainers.image.created=$CREATED"
umoci gc --layout "$OCI"
# umoci names the manifest by its tag; registries and podman also read the full reference.
"$PYTHON" - "$OCI/index.json" "$REPOSITORY:$VERSION" <<'EOF'
import json, sys
path, reference = sys.argv[1], sys.argv[2]
index = json.load(open(path))
(manifest,) = index["manifests"]
manifest.setdefault("annotations", {})["io.containerd.image.name"] = reference
json.dump(index, open(path, "w"), separators=(",", ":"), sort_keys=True)
EOF
find "$OCI" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

ARCHIVE=dist/kapstan-$VERSION.oci.tar
tar --create --file "$ARCHIVE" --directory "$OCI" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner .
cp "$ROOT/usr/share/kapstan/debian-packages.txt" "dist/kapstan-$VERSION.packages.txt"
DIGEST=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$OCI/index.json")
echo "$DIGEST" > "dist/kapstan-$VERSION.digest"
echo "[image] $ARCHIVE  $REPOSITORY:$VERSION  $(du -h "$ARCHIVE" | cut -f1)" >&2
echo "$DIGEST"
