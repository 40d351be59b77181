"""Which model family an agent spec names, and the warning for a panel of one family.

Members of one family share their training and their blind spots, so they agree with each other more than
independent judges would: diversity of models is the strongest lever a panel has (Zhang et al. 2025; PoLL,
Verga et al. 2024). moot cannot tell a family from a name it does not know, and a program, an ACP agent or a
person may be anything, so those specs have no family and never trigger the warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Model-name prefixes of the families one meets behind OpenAI-compatible, Anthropic and Ollama endpoints.
FAMILIES = (
    (re.compile(r"^(gpt|chatgpt|o\d)"), "OpenAI GPT"),
    (re.compile(r"^claude"), "Anthropic Claude"),
    (re.compile(r"^(gemini|gemma)"), "Google Gemini"),
    (re.compile(r"^(meta-)?llama"), "Meta Llama"),
    (re.compile(r"^qwen|^qwq"), "Qwen"),
    (re.compile(r"^(mistral|mixtral|codestral|ministral|magistral)"), "Mistral"),
    (re.compile(r"^deepseek"), "DeepSeek"),
    (re.compile(r"^phi"), "Microsoft Phi"),
    (re.compile(r"^grok"), "xAI Grok"),
    (re.compile(r"^smollm"), "SmolLM"),
)
MODEL_BACKENDS = ("openai", "anthropic", "ollama")
EMBEDDED_FAMILY = "SmolLM"  # `local`: the embedded SmolLM2-135M
PANEL_SIZE = 3  # fewer roles are a pair (a critic and an author), not a panel


def model_family(spec: str) -> str | None:
    """The family of the model ``spec`` names (``openai:gpt-4o`` -> OpenAI GPT), or None when unknown."""
    backend, _, rest = spec.strip().partition(":")
    if backend == "local":
        return EMBEDDED_FAMILY if not rest else None
    if backend not in MODEL_BACKENDS:
        return None
    model = rest.split("@", 1)[0].strip().lower().rsplit("/", 1)[-1]  # openrouter-style "vendor/model" too
    return next((family for pattern, family in FAMILIES if pattern.search(model)), None)


def one_family(specs: Mapping[str, str]) -> str | None:
    """The family every member of a panel (three roles or more) is of, when they are all of one known family."""
    if len(specs) < PANEL_SIZE:
        return None
    families = {model_family(spec) for spec in specs.values()}
    return None if len(families) != 1 else families.pop()


def one_family_warning(specs: Mapping[str, str]) -> str | None:
    """One sentence when every member of a panel (three roles or more) is of the same known family."""
    family = one_family(specs)
    if family is None:
        return None
    return (
        f"every member of this panel is of one model family ({family}): one family shares its blind spots, so its "
        "members agree more than independent judges would; mix in models of other families for views that check "
        "each other."
    )
