"""Live wing (I/O edge): the cluster's state, read from a Kubernetes API server (the only kr8s user) or a snapshot file."""
