// Excluded by directory.exclude: 'test/*'; rendering it would fail.
error 'test fixture, never rendered'
