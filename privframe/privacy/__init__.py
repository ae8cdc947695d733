"""The privacy layer: budgets and their conversions, exact noise, privacy events, ledgers and accounting math.

Values and pure functions only: nothing here reads data or knows a plugin. The analyst's names (budgets,
ledgers, events) are re-exported by :mod:`privframe`; the author's by :mod:`privframe.plugin`.
"""
