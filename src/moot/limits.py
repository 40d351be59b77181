"""How much moot takes from outside in one request: the subject of a deliberation.

A topic or a question is written into the record's header and into every prompt of the debate, so it is
bounded once, here, for every door (``moot run``, ``--batch``, MCP ``start_debate``, the agent tools). The limit
suits a person or a capable model pasting a long question with its background (moot review's council question,
a 40,000-character diff and its commit messages, fits); longer material belongs in a source or context file.
"""

from __future__ import annotations

from moot.errors import UserError

MAX_SUBJECT_CHARS = 64_000


def subject_problem(name: str, text: str | None) -> str | None:
    """The one-sentence refusal of a ``name`` (topic, question) over :data:`MAX_SUBJECT_CHARS`, else ``None``."""
    if text is None or len(text) <= MAX_SUBJECT_CHARS:
        return None
    return (
        f"the {name} is {len(text):,} characters, over moot's limit of {MAX_SUBJECT_CHARS:,} for a {name}; shorten "
        "it and put longer background in a source or context file."
    )


def require_subject(name: str, text: str | None) -> None:
    """Refuse (``UserError``) a subject over the limit, before anything is named after it or written."""
    problem = subject_problem(name, text)
    if problem is not None:
        raise UserError(problem)
