"""Live wing (I/O edge): the cluster's state, from a Kubernetes API server or a snapshot file.

transport.py is the only module that runs kr8s and httpx.
"""
