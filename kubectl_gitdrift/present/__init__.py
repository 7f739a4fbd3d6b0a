"""Present wing (pure): a run's reports in each output format: JSON, text, diff, Markdown, OpenMetrics."""
