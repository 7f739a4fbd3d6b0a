"""Sources wing (I/O edge): fetches an Application's sources and renders them as Argo CD does."""
