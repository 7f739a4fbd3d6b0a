"""`python -m kubectl_gitdrift`."""

from kubectl_gitdrift.cli.main import run

run()
