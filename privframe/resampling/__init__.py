"""The resampling layer: a sampler's design, block seeds, resample sizes, and the engine that draws the blocks.

A sampler says *what* it draws (:class:`~privframe.resampling.design.Design`); this layer decides *how*:
independently seeded blocks of rows, walked in chunks that fit a memory budget on worker threads.
"""
