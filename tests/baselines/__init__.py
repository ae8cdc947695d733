"""Test-only reimplementations of published methods, used for comparison (never by the library)."""
