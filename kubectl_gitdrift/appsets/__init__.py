"""Pure: expands ApplicationSets into the Applications the ApplicationSet controller would make."""
