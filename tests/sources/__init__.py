"""Tests of the sources wing (kubectl_gitdrift/sources/)."""
