"""The default plugins: gitdrift's own rules, normalizers and output formats."""
