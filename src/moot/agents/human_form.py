"""A whole turn as one Markdown form that a person fills in with ``$EDITOR``, and the form read back.

The form is drawn from the turn's JSON Schema:

- one ``## field`` heading per field, ``## outer.inner`` for a field of a nested object;
- under each heading a hint in an HTML comment: the field's description and, for a fixed set of values,
  the choices (the only choice is filled in);
- a list of sentences as ``- `` bullets;
- a list of objects as one ``### item`` block per item, each with ``#### field`` headings.

Hints are dropped when the form is read back. The answer has the schema's shape; what the protocol
thinks of it is the driver's business, as for every other participant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

HINT = re.compile(r"<!--.*?-->", re.S)
FIELD, ITEM, ITEM_FIELD = "## ", "### item", "#### "
BULLET = re.compile(r"^\s*[-*]\s+")
YES, NO = ("yes", "y", "true"), ("no", "n", "false")


class FormError(ValueError):
    """The form cannot be read back; the message names what to change."""


@dataclass(frozen=True)
class Slot:
    """One heading of the form: where its answer goes, and what it may hold."""

    path: tuple[str, ...]
    schema: dict[str, Any]
    item_slots: tuple[Slot, ...] = ()  # the fields of each item, for a list of objects

    @property
    def name(self) -> str:
        return ".".join(self.path)


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` and take the first non-null branch of a union."""
    while "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key, []) if b.get("type") != "null"]
        if branches:
            merged = {k: v for k, v in schema.items() if k != key}
            return resolve({**branches[0], **merged}, root)
    return schema


def fixed_value(schema: dict[str, Any]) -> tuple[bool, Any]:
    """A field with nothing to ask: (True, its value), else (False, None)."""
    if schema.get("type") == "null":
        return True, None  # nothing to say now (an Agora target before anyone proposed)
    if schema.get("type") == "array" and schema.get("maxItems") == 0:
        return True, []  # no items are allowed now (Agora evidence outside research)
    if schema.get("type") == "string" and "enum" not in schema and schema.get("maxLength") == 0:
        return True, ""  # can only be empty now, like a critique summary before DONE
    return False, None


def slots_of(
    schema: dict[str, Any], root: dict[str, Any], prefix: tuple[str, ...] = (), *, in_item: bool = False
) -> list[Slot] | None:
    """The form's headings for an object schema, or None for a shape a form cannot hold."""
    found: list[Slot] = []
    for key, sub in resolve(schema, root).get("properties", {}).items():
        sub = resolve(sub, root)
        path = (*prefix, key)
        if fixed_value(sub)[0]:
            continue
        if sub.get("type") == "object":
            nested = slots_of(sub, root, path, in_item=in_item)
            if nested is None:
                return None
            found += nested
        elif sub.get("type") == "array" and resolve(sub.get("items", {}), root).get("type") == "object":
            if in_item:
                return None  # a list of objects inside a list of objects
            inner = slots_of(sub["items"], root, in_item=True)
            if inner is None:
                return None
            found.append(Slot(path, sub, tuple(inner)))
        elif sub.get("type") == "array" and resolve(sub.get("items", {}), root).get("type") == "array":
            return None
        else:
            found.append(Slot(path, sub))
    return found


def form_of(schema: dict[str, Any], title: str) -> str | None:
    """The Markdown form for a turn of this schema, or None when its shape cannot be written as one."""
    slots = slots_of(schema, schema)
    if not slots:
        return None
    lines = [
        f"<!-- {title}. Write under each heading and keep the headings; these hints are dropped.",
        "     Save and close the editor to send the turn; save an empty file to give it up. -->",
    ]
    for slot in slots:
        lines += ["", f"{FIELD}{slot.name}", _hint(slot)]
        if slot.item_slots:
            for _ in range(max(1, int(slot.schema.get("minItems", 0)))):
                lines.append(ITEM)
                for inner in slot.item_slots:
                    lines += [f"{ITEM_FIELD}{inner.name}", _hint(inner), ""]
        else:
            lines.append(_prefilled(slot.schema))
    return "\n".join(lines).rstrip() + "\n"


def _hint(slot: Slot) -> str:
    schema = slot.schema
    parts = [schema["description"].rstrip(".")] if schema.get("description") else []
    if "enum" in schema:
        parts.append("keep one of: " + " | ".join(str(v) for v in schema["enum"]))
    elif schema.get("type") == "boolean":
        parts.append("yes or no")
    elif schema.get("type") in ("integer", "number"):
        parts.append("a number")
    elif schema.get("type") == "array":
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        count = f"{low} to {high}" if high is not None else f"at least {low}"
        if slot.item_slots:
            parts.append(f"{count} items, each starting with a '{ITEM}' line; copy the block for another")
        else:
            parts.append(f"{count} items, one '- ' line each")
    limit = schema.get("maxLength") or schema.get("items", {}).get("maxLength")
    if limit:
        parts.append(f"at most {limit} characters")
    return "<!-- " + "; ".join(parts) + " -->"


def _prefilled(schema: dict[str, Any]) -> str:
    enum = schema.get("enum")
    return str(enum[0]) if enum and len(enum) == 1 else ""


def read_form(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The answer a filled-in form gives, in the schema's shape; FormError names what to change."""
    slots = slots_of(schema, schema) or []
    by_name = {slot.name: slot for slot in slots}
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in HINT.sub("", text).splitlines():
        if line.startswith(FIELD):
            name = line[len(FIELD) :].strip()
            if name not in by_name:
                raise FormError(f"'{line.strip()}' is not a field of this turn; keep the headings the form gave")
            if name in blocks:
                raise FormError(f"the heading '{line.strip()}' appears twice; keep one")
            current = blocks[name] = []
        elif current is not None:
            current.append(line)
        elif line.strip():
            raise FormError("text above the first heading has no field; write it under a heading")
    answer = _fixed_fields(schema, schema)
    for slot in slots:
        lines = blocks.get(slot.name)
        if lines is None:
            raise FormError(f"the heading '{FIELD}{slot.name}' is missing; put it back and write under it")
        value = _items(slot, lines, schema) if slot.item_slots else _leaf(slot, lines)
        _put(answer, slot.path, value)
    return answer


def _fixed_fields(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """The skeleton of the answer: every object, with the fields that have nothing to ask filled in."""
    found: dict[str, Any] = {}
    for key, sub in resolve(schema, root).get("properties", {}).items():
        sub = resolve(sub, root)
        fixed, value = fixed_value(sub)
        if fixed:
            found[key] = value
        elif sub.get("type") == "object":
            found[key] = _fixed_fields(sub, root)
    return found


def _items(slot: Slot, lines: list[str], root: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, list[str]]] = []
    current: list[str] | None = None
    known = {inner.name: inner for inner in slot.item_slots}
    for line in lines:
        if line.strip() == ITEM:
            items.append({})
            current = None
        elif line.startswith(ITEM_FIELD):
            name = line[len(ITEM_FIELD) :].strip()
            if not items or name not in known:
                where = f"'{ITEM}'" if not items else f"one of {', '.join(known)}"
                raise FormError(f"'{line.strip()}' under {FIELD}{slot.name} is out of place; use {where}")
            current = items[-1].setdefault(name, [])
        elif current is not None:
            current.append(line)
        elif line.strip():
            raise FormError(f"text under {FIELD}{slot.name} must sit under an '{ITEM_FIELD}field' heading")
    found: list[dict[str, Any]] = []
    for number, item in enumerate(items, start=1):
        if not any("".join(lines).strip() for lines in item.values()):
            continue  # an unused copy of the block
        value = _fixed_fields(slot.schema["items"], root)
        for inner in slot.item_slots:
            inner_lines = item.get(inner.name)
            if inner_lines is None:
                raise FormError(f"item {number} of {slot.name} lacks '{ITEM_FIELD}{inner.name}'; put it back")
            _put(value, inner.path, _leaf(inner, inner_lines, f"{slot.name} item {number}: "))
        found.append(value)
    return found


def _leaf(slot: Slot, lines: list[str], where: str = "") -> Any:
    schema = slot.schema
    text = "\n".join(lines).strip()
    label = f"{where}{slot.name}"
    if "enum" in schema:
        options = list(schema["enum"])
        chosen = [o for o in options if str(o).lower() == text.lower()]
        if not chosen:
            raise FormError(f"{label} is {text!r}; write one of {', '.join(str(o) for o in options)}")
        return chosen[0]
    kind = schema.get("type")
    if kind == "boolean":
        if text.lower() not in (*YES, *NO):
            raise FormError(f"{label} is {text!r}; write yes or no")
        return text.lower() in YES
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            raise FormError(f"{label} is {text!r}; write a number, like 0.7") from None
    if kind == "array":
        return _bullets(lines)
    return text


def _bullets(lines: list[str]) -> list[str]:
    """``- `` items; a line that does not start one continues the item above it."""
    items: list[str] = []
    for line in lines:
        if BULLET.match(line):
            items.append(BULLET.sub("", line, count=1).strip())
        elif line.strip() and items:
            items[-1] = f"{items[-1]} {line.strip()}"
        elif line.strip():
            items.append(line.strip())
    return items


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
