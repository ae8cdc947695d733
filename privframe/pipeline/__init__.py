"""Pipelines: named parts plus settings, resolved once when built, then run on data."""

from __future__ import annotations

from privframe.pipeline.build import Part, Pipeline, ResolvedPipeline

__all__ = ["Part", "Pipeline", "ResolvedPipeline"]
