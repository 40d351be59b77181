"""moot: structured deliberations between LLMs, coding agents and people, with enforced rules."""

__version__ = "0.1.0"
