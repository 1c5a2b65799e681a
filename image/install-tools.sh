#!/bin/sh
# The tools `make image` and `make image-test` use, from Debian's packages (the project's machines are
# Debian bookworm, as root): mmdebstrap builds the root, umoci packs the OCI layout, skopeo checks the
# archive; podman runs the image with runc (crun cannot start containers here: image/README.md).
set -eu
PACKAGES="mmdebstrap umoci skopeo podman crun runc uidmap"
missing=""
for package in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "image/install-tools.sh: apt-get install$missing" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
