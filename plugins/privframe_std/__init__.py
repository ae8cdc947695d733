"""privframe's standard plugins.

Registered through the ``privframe`` entry-point group exactly like third-party plugins; the core never
imports this package.
"""

from __future__ import annotations

__all__: list[str] = []
