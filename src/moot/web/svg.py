"""A tiny SVG builder whose every text and attribute value is escaped: records are untrusted input."""

from __future__ import annotations

from collections.abc import Iterable

from markupsafe import Markup, escape

# One colour per participant, in order of appearance; a colour-blind-safe palette (Okabe–Ito).
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#000000")

# The smallest a plot is shown, as a share of its drawn size: its 11 px labels stay about 6 px high.
LEAST_SCALE = 0.55


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def el(tag: str, attrs: dict[str, object] | None = None, *children: str | Markup) -> Markup:
    """``<tag attrs>children</tag>``: plain strings are escaped, Markup is kept (it was built here)."""
    shown = "".join(f' {_attribute(name)}="{escape(str(value))}"' for name, value in (attrs or {}).items())
    inner = Markup("").join(child if isinstance(child, Markup) else escape(child) for child in children)
    return Markup(f"<{tag}{shown}>") + inner + Markup(f"</{tag}>")


def _attribute(name: str) -> str:
    """``class_`` is ``class``, ``text_anchor`` is ``text-anchor`` (Python names for SVG attributes)."""
    return name.rstrip("_").replace("_", "-")


def text(x: float, y: float, value: str, **attrs: object) -> Markup:
    return el("text", {"x": f"{x:.1f}", "y": f"{y:.1f}", **attrs}, value)


def line(x1: float, y1: float, x2: float, y2: float, **attrs: object) -> Markup:
    return el("line", {"x1": f"{x1:.1f}", "y1": f"{y1:.1f}", "x2": f"{x2:.1f}", "y2": f"{y2:.1f}", **attrs})


def figure(width: float, height: float, label: str, parts: Iterable[Markup]) -> Markup:
    """An inline SVG image with an accessible name, drawn at its view box's size or shrunk to its card's width,
    but never below :data:`LEAST_SCALE` of it (a wider one scrolls inside its card)."""
    return el(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {width:.0f} {height:.0f}",
            "width": f"{width:.0f}",
            "style": f"min-width: {LEAST_SCALE * width:.0f}px",
            "role": "img",
            "aria-label": label,
            "class": "plot",
        },
        el("title", None, label),
        *parts,
    )


__all__ = ["colour", "el", "figure", "line", "text"]
