"""Tests of the compare wing (kubectl_gitdrift/compare/)."""
