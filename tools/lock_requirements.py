#!/usr/bin/env python3
"""Print one dist.lock set as a pip requirements file with hashes (`pip install --require-hashes`).

Usage: ``python tools/lock_requirements.py [--lock dist.lock] PLATFORM CPYTHON [--tools]``, e.g.
``linux-amd64 cp312``: the exact wheels `make dist` bundles for that platform and Python, each as
``name==version --hash=sha256:...``. ``--tools`` prints the locked build tools instead (pip,
setuptools). The container image (Dockerfile) installs from this, so the image and the release
archives carry the same wheels. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def requirements(lock: dict[str, Any], platform: str, python: str, *, tools: bool = False) -> str:
    if tools:
        entries = lock["tools"]
    else:
        key = f"{platform}-{python}"
        if key not in lock["sets"]:
            known = ", ".join(sorted(lock["sets"]))
            raise SystemExit(f"lock_requirements: dist.lock has no set {key} (it has: {known})")
        entries = lock["sets"][key]
    lines = [f"{e['name']}=={e['version']} --hash=sha256:{e['sha256']}" for e in entries]
    return "".join(line + "\n" for line in sorted(lines, key=str.lower))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("platform", help="e.g. linux-amd64, linux-arm64")
    parser.add_argument("python", help="e.g. cp312")
    parser.add_argument("--lock", type=Path, default=ROOT / "dist.lock")
    parser.add_argument("--tools", action="store_true", help="the build tools (pip, setuptools)")
    args = parser.parse_args(argv)
    lock = json.loads(args.lock.read_text(encoding="utf-8"))
    sys.stdout.write(requirements(lock, args.platform, args.python, tools=args.tools))
    return 0


if __name__ == "__main__":
    sys.exit(main())
