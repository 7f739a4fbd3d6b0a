#!/usr/bin/env bash
# What `make test` needs beyond the README's prerequisites (Python 3, git, kubectl): Debian's
# docker-registry (the real OCI registry the chart tests start on loopback) and htpasswd (from
# apache2-utils, for its basic-auth tests), and fish (the fish completion script is run in
# it). As root with apt-get, installs what is missing; otherwise prints one line naming the
# packages and the command, and fails.
set -euo pipefail

missing=()
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
command -v fish >/dev/null 2>&1 || missing+=(fish)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test_prereqs: installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "error: the tests need ${missing[*]}: run 'sudo apt-get install ${missing[*]}' (Debian), then make test again" >&2
exit 3
