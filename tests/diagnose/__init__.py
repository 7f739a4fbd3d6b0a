"""Tests of the diagnose wing (kubectl_gitdrift/diagnose/)."""
