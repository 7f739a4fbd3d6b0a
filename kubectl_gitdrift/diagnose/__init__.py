"""Diagnose wing (pure): who wrote each drifted field, why it persists, and what to do."""
