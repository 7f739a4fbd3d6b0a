"""Tests of the appsets wing (kubectl_gitdrift/appsets/)."""
