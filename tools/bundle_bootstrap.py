# ruff: noqa: UP031, RUF005, PTH100, PTH101, PTH103, PTH104, PTH111, PTH113, PTH118, PTH119, PTH120, PTH123
# (Python 3.5 syntax and os.path on purpose: see the docstring)
"""The `__main__.py` of the kubectl-gitdrift release executable (built by tools/make_dist.py).

The executable is `#!/usr/bin/env python3` followed by a zip archive (a zipapp). The archive holds
one installed site-packages per supported CPython minor, split into per-distribution folders
(`lib/<dist>-<hash>/`) so a pure-Python wheel is stored once for all Pythons. C extensions cannot
be imported from a zip, so on first run the folders for the running Python are extracted into a
versioned cache directory (`~/.cache/kubectl-gitdrift/<version>-<build>/py3.X/`), shiv-style;
later runs only check a marker file.

If the `python3` found first on PATH is not one the archive was built for, the program re-executes
itself with `$KUBECTL_GITDRIFT_PYTHON`, or the newest bundled `python3.X` on PATH, and otherwise
says which Pythons it needs.

This file runs before the version check, so it keeps to Python 3.5 syntax (no f-strings, no
annotations; types are in comments) and to the standard library.
"""

import json
import os
import shutil
import sys
import tempfile
import zipfile

ENTRY_ENV = "KUBECTL_GITDRIFT_ENTRY"
PYTHON_ENV = "KUBECTL_GITDRIFT_PYTHON"
CACHE_ENV = "KUBECTL_GITDRIFT_CACHE"
_REEXEC_ENV = "_KUBECTL_GITDRIFT_REEXEC"
_MARKER = ".complete"
_SETUP_ERROR = 3


def _fail(message, hint):
    # type: (str, str) -> None
    sys.stderr.write("error: %s\n  hint: %s\n" % (message, hint))
    sys.exit(_SETUP_ERROR)


def _entry_name(argv0):
    # type: (str) -> str
    """Which console script we are: the argocd plugin, kubectl's completion helper, or the
    kubectl plugin (the default)."""
    base = os.path.basename(argv0)
    if base.startswith("argocd-"):
        return "argocd"
    if base.startswith("kubectl_complete-"):
        return "complete"
    return "kubectl"


def _cache_root():
    # type: () -> str
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kubectl-gitdrift")


def _reexec(archive, meta, entry, again):
    # type: (str, dict, str, bool) -> None
    wanted = sorted(meta["pythons"], key=lambda v: tuple(int(p) for p in v.split(".")))
    here = "%d.%d" % sys.version_info[:2]
    if again:
        _fail(
            "%s runs Python %s, which this build of kubectl-gitdrift does not bundle (%s)"
            % (sys.executable, here, ", ".join(wanted)),
            "point %s at a python%s" % (PYTHON_ENV, " or python".join(wanted)),
        )
    candidates = []
    if os.environ.get(PYTHON_ENV):
        candidates.append(os.environ[PYTHON_ENV])
    for version in reversed(wanted):
        found = shutil.which("python" + version)
        if found:
            candidates.append(found)
    for python in candidates:
        env = dict(os.environ)
        env[_REEXEC_ENV] = "1"
        env[ENTRY_ENV] = entry
        try:
            os.execve(python, [python, archive] + sys.argv[1:], env)
        except OSError:
            continue
    _fail(
        "kubectl-gitdrift needs CPython %s; python3 here is %s %s (%s) and no python%s is on PATH"
        % (
            " or ".join(wanted),
            sys.implementation.name,
            here,
            sys.executable,
            " / python".join(wanted),
        ),
        "install one of them, or set %s=/path/to/python3.X" % PYTHON_ENV,
    )


def _extract(archive, zf, meta, here):
    # type: (str, zipfile.ZipFile, dict, str) -> str
    root = os.path.join(_cache_root(), "%s-%s" % (meta["version"], meta["build"][:12]))
    site = os.path.join(root, "py" + here)
    if os.path.isfile(os.path.join(site, _MARKER)):
        return site
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as exc:
        _fail(
            "cannot create the cache directory %s: %s" % (root, exc),
            "set %s to a writable directory" % CACHE_ENV,
        )
    tmp = tempfile.mkdtemp(prefix=".py%s-" % here, dir=root)
    try:
        for prefix in meta["pythons"][here]:
            for info in zf.infolist():
                if not info.filename.startswith(prefix) or info.filename.endswith("/"):
                    continue
                rel = info.filename[len(prefix) :]
                if rel.startswith("/") or ".." in rel.split("/"):
                    _fail("%s: bad member %s" % (archive, info.filename), "rebuild the archive")
                target = os.path.join(tmp, *rel.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(target, mode)
        with open(os.path.join(tmp, _MARKER), "w") as marker:
            marker.write(meta["build"] + "\n")
        try:
            os.rename(tmp, site)
        except OSError:
            if not os.path.isfile(os.path.join(site, _MARKER)):
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process extracted it first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return site


def main():
    # type: () -> None
    archive = os.path.dirname(os.path.abspath(__file__))
    entry = os.environ.pop(ENTRY_ENV, "") or _entry_name(sys.argv[0])
    again = bool(os.environ.pop(_REEXEC_ENV, ""))
    with zipfile.ZipFile(archive) as zf:
        meta = json.loads(zf.read("_bundle.json").decode("utf-8"))
        here = "%d.%d" % sys.version_info[:2]
        if sys.implementation.name != "cpython" or here not in meta["pythons"]:
            _reexec(archive, meta, entry, again)
        site = _extract(archive, zf, meta, here)
    sys.path.insert(0, site)
    module_name, _, function = meta["entries"][entry].partition(":")
    module = __import__(module_name, fromlist=[function])
    getattr(module, function)()


if __name__ == "__main__":
    main()
