"""Live wing (I/O edge): the cluster's state, from a Kubernetes API server or a snapshot."""
