"""Tests of the run wing (kubectl_gitdrift/run/)."""
