"""Pipelines: named parts plus settings, resolved once when built, then run on data."""

from __future__ import annotations

from privframe.pipeline.build import Pipeline
from privframe.pipeline.parts import Part
from privframe.pipeline.resolve import ResolvedPipeline

__all__ = ["Part", "Pipeline", "ResolvedPipeline"]
