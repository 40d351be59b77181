"""moot's exceptions are one tree under MootError, every class defined in moot.errors and drawn in its docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import moot
from moot import errors

# Raised and caught inside moot, never by a caller: not part of the tree.
OUTSIDE_THE_TREE = {
    # read_form raises it for a person's form; the human agent catches it and opens the form again (or gives up
    # with AgentBadReply). Its messages are fragments that the agent's own sentence quotes.
    "moot.agents.human_form.FormError",
}

# One line of the drawn tree: four columns a level, then the class name.
TREE_LINE = re.compile(r"^(?P<indent>(?:[│ ] {3})*(?:[├└]── )?)(?P<name>[A-Z]\w*)\b")


def defined_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class a module of moot defines, but for private ones, by ``module.Name``."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(moot.__path__, "moot."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # importing an entry point runs its command
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                found[f"{info.name}.{name}"] = value
    return found


def errors_classes() -> dict[str, type[BaseException]]:
    return {
        name: value
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == "moot.errors"
    }


def drawn_tree() -> dict[str, str | None]:
    """The tree in moot.errors' docstring: each class name and the name it is drawn under (None for the root)."""
    lines = (errors.__doc__ or "").splitlines()
    start = lines.index("MootError")
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            break
        match = TREE_LINE.match(line)
        assert match is not None, f"not a line of the tree: {line!r}"
        depth = len(match["indent"]) // 4
        assert depth <= len(path), f"{match['name']} is drawn below no class"
        name = match["name"]
        assert name not in parents, f"{name} is drawn twice"
        del path[depth:]
        parents[name] = path[-1] if path else None
        path.append(name)
    return parents


def test_every_public_exception_class_is_defined_in_moot_errors() -> None:
    elsewhere = sorted(name for name, value in defined_exceptions().items() if value.__module__ != "moot.errors")
    assert elsewhere == sorted(OUTSIDE_THE_TREE), "define moot's exceptions in moot.errors"


def test_every_exception_in_moot_errors_is_a_moot_error() -> None:
    assert errors_classes()
    assert [name for name, value in errors_classes().items() if not issubclass(value, errors.MootError)] == []


def test_the_docstring_draws_exactly_the_classes_of_moot_errors_each_under_its_base() -> None:
    drawn = drawn_tree()
    assert sorted(drawn) == sorted(errors_classes())
    for name, parent in drawn.items():
        base = getattr(errors, name).__bases__[0]  # the first base: UnknownAgentSpec is also a ValueError
        assert (base.__name__ if parent is not None else None) == parent, f"{name} derives from {base.__name__}"
