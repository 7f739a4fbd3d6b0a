"""Tests of the cli wing (kubectl_gitdrift/cli/)."""
