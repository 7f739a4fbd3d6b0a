// .libsonnet files are only imported, never rendered on their own.
{ error: 'not rendered' }
