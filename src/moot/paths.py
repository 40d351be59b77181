"""The one rule for a path that a person or a client names: it stays inside the work root.

Every such path is checked here and nowhere else: a duel's source, a roundtable's agenda, a critique's
``--context``, each ``--source``, on the command line, in a ``--batch`` line, over MCP and in the agent tools;
and every record folder moot writes to or lists (``.dialogues/``, ``debates/``, any registered protocol's).

- A relative path is taken from ``base``: the current directory on the command line, the work root over MCP
  and in the agent tools.
- The path is followed one component at a time, as the kernel follows it, and must end inside the work root
  (the root's real path: links above the root, like ``/home -> /usr/home``, are followed freely).
- A symbolic link that lies inside the root must lead to a place inside it. A file moot only reads may be
  reached through such a link (a repository's ``docs/latest -> v2``); a record folder, or anything moot writes,
  may not be a link at all.

A refusal is :class:`moot.errors.PathRefused`: one sentence that names the fix, raised before anything is read or written.
"""

from __future__ import annotations

import os
from pathlib import Path

from moot.errors import PathRefused

# The fix a refusal names, by who gave the path.
CLI_FIX = 'run moot from a directory that contains it, or pass --root (a batch line\'s "root") with one'
CLIENT_FIX = "name a file inside the work root, by its path relative to the root"


def real_root(root: str | os.PathLike[str]) -> Path:
    """The work root as the rule compares against it: absolute, every link resolved."""
    return Path(os.path.realpath(root))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _no_nul(given: str | os.PathLike[str], what: str) -> str:
    text = os.fspath(given)
    if "\x00" in text:  # an MCP argument or a batch line can hold one; no path can
        raise PathRefused(f"{what} holds a NUL character; give the path of a file inside the work root.")
    return text


def _follow(root: Path, path: Path, what: str, *, links: bool) -> Path:
    """The real path ``path`` (absolute) names; refused at a link inside ``root`` that leaves it, or at any
    link inside ``root`` unless ``links``."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        if part == "..":
            current = current.parent
            continue
        step = current / part
        try:
            linked = step.is_symlink()
        except OSError as exc:  # a name too long for the file system, say
            raise PathRefused(
                f"{what} cannot be used: {step} ({exc.strerror or exc}); give the path of a file inside the work root."
            ) from None
        if linked:
            target = Path(os.path.realpath(step))
            if _within(current, root):
                if not links:
                    raise PathRefused(
                        f"{step} is a symbolic link; moot keeps records only in real files and directories under "
                        "the work root, so replace the link with what it points to.",
                        link=step,
                    )
                if not _within(target, root):
                    raise PathRefused(
                        f"{step} is a symbolic link that leads out of the work root {root}, so moot does not read "
                        f"{what} through it; copy the file into the work root.",
                        link=step,
                    )
            step = target
        current = step
    return current


def inside_root(
    root: str | os.PathLike[str],
    given: str | os.PathLike[str],
    *,
    what: str,
    base: str | os.PathLike[str] | None = None,
    fix: str = CLI_FIX,
) -> Path:
    """The real path of ``given``, a file or directory moot is to read, once it is known to lie inside ``root``.

    ``what`` names it in a refusal ("the source document"); ``base`` is where a relative path starts (default:
    the current directory); ``fix`` is what the refusal tells the person who gave the path to do.
    """
    text = _no_nul(given, what)
    top = real_root(root)
    start = Path(os.path.abspath(base)) if base is not None else Path.cwd()
    found = _follow(top, start / text, what, links=True)
    if not _within(found, top):
        raise PathRefused(f"{what} {text} is outside the work root {top}; {fix}.")
    return found


def record_place(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> Path:
    """``<root>/<relative>``: a record folder (a protocol's ``folder``) or a record in one, which moot writes or
    lists; refused when it or any directory between it and the root is a symbolic link, or it is not under the
    root."""
    text = _no_nul(relative, "the record's path")
    top = real_root(root)
    found = _follow(top, top / text, "a record", links=False)
    if found == top or not _within(found, top):
        raise PathRefused(f"{text} is not under the work root {top}; name a record folder or a record inside it.")
    return found


def relative_text(text: str, root: str | os.PathLike[str]) -> str:
    """``text`` with every path under the work root ``root`` written relative to it (``/home/me/repo/docs/a.md``
    -> ``docs/a.md``): what a page meant for others shows, so that it names no directory of this machine."""
    for base in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        if base != os.sep:
            text = text.replace(base + os.sep, "")
    return text
