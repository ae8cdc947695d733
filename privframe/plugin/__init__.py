"""The plugin author's API (filled in below)."""
