"""Tests of the present wing (kubectl_gitdrift/present/)."""
