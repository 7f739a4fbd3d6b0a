"""Tests of the live wing (kubectl_gitdrift/live/)."""
