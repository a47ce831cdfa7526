"""selection."""
