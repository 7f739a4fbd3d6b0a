"""Diagnose wing (pure): who wrote each drifted field, why the drift persists, and what to do about it."""
