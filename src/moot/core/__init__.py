"""moot.core."""
