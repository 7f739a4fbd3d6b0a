"""Compare wing (pure): decides, as Argo CD does, whether git's objects and the live ones differ."""
