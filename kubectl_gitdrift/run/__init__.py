"""Run wing: selects a run's Applications, gathers their inputs, runs the engine for each."""
