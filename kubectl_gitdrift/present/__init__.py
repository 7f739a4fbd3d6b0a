"""Present wing (pure): a run's reports in each format (JSON, text, diff, Markdown, metrics)."""
