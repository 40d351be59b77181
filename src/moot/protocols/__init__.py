"""The seed protocols as pure state machines. Nothing here does I/O or reads a clock.

Which protocols exist is the registry's to say (:mod:`moot.registry`), not this package's.
"""
