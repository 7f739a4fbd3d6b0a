"""Run wing: selects a run's Applications (its Request), gathers and renders their inputs, and
runs the engine for each, on every core."""
