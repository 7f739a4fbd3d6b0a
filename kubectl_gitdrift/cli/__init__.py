"""CLI wing: flags, streams, exit codes and the long-running commands (serve, completion)."""
