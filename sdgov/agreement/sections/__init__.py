"""sections."""
