"""`python -m kubectl_gitdrift`."""

from kubectl_gitdrift.cli import run

run()
