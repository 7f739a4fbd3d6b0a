"""The one error tree, and the exit codes it maps to (cli.main is the only place that maps them)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Exit codes, following `kubectl diff`: 0 no drift, 1 drift, anything above 1 is a failure."""

    OK = 0  # compared, no drift
    DRIFT = 1  # compared, drift found
    USAGE_ERROR = 2  # bad flags or arguments
    ERROR = 3  # bad input: snapshot, source, git, kustomize, unknown app
    PLUGIN_ERROR = 4  # a plugin failed to load or raised
    INTERNAL_ERROR = 5  # a bug in gitdrift
    CLUSTER_ERROR = 6  # the cluster could not be reached or refused us
    INCOMPLETE = 7  # compared, but some resources could not be read: result unknown
    INTERRUPTED = 130


class GitDriftError(Exception):
    """An expected failure: the message is shown to the user as one line, the hint below it."""

    exit_code = ExitCode.ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(GitDriftError):
    """Bad flag combinations found after argparse."""

    exit_code = ExitCode.USAGE_ERROR


class SourceError(GitDriftError):
    """Unreadable YAML from git, a failing kustomize/helm/git, a missing repo or revision."""


class SnapshotError(GitDriftError):
    """A snapshot that is missing, corrupt, or of the wrong kind or version."""


class AppError(GitDriftError):
    """The Application asked for is missing, or its spec cannot be understood."""


class ClusterError(GitDriftError):
    """Unreachable, unauthorized or forbidden cluster access."""

    exit_code = ExitCode.CLUSTER_ERROR


class PluginError(GitDriftError):
    """A plugin failed to import, registered an unknown hook, or raised inside a hook."""

    exit_code = ExitCode.PLUGIN_ERROR
