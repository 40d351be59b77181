"""Argument checks; each failure is an ``InvalidInputError`` whose one sentence names the fix."""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta

from moot.errors import InvalidInputError
from moot.ledger.models import EVENT_TYPES, RUN_STATUSES

_SLUG = re.compile(r"[^\W_]+(?:-[^\W_]+)*")  # letters and digits of any script, single hyphens: no path parts
_OUTCOME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_EVENT_BYTES = 64 * 1024
_MAX_TTL_SECONDS = 7 * 24 * 3600


def require_text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string; pass a value for it.")
    return value


def optional_text(name: str, value: object) -> str | None:
    return None if value is None else require_text(name, value)


def ttl_delta(ttl_seconds: float) -> timedelta:
    if (
        isinstance(ttl_seconds, bool)
        or not isinstance(ttl_seconds, int | float)
        or not math.isfinite(ttl_seconds)
        or not 0 < ttl_seconds <= _MAX_TTL_SECONDS
    ):
        raise InvalidInputError(
            f"ttl_seconds must be a number of seconds above 0 and at most {_MAX_TTL_SECONDS}; pass e.g. 900."
        )
    return timedelta(seconds=ttl_seconds)


def positive_int(name: str, value: object, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(f"{name} must be an integer of at least {minimum}; pass e.g. {max(minimum, 1)}.")
    return value


def outcome_name(outcome: object) -> str:
    if not isinstance(outcome, str) or not _OUTCOME.fullmatch(outcome):
        raise InvalidInputError(
            f"Outcome {outcome!r} is not an UPPER_SNAKE outcome name; pass one such as ACCEPTED_CONSENSUS or DISSENT."
        )
    return outcome


def topic_slug_of(topic_slug: object) -> str:
    if not isinstance(topic_slug, str) or len(topic_slug) > 120 or not _SLUG.fullmatch(topic_slug):
        raise InvalidInputError(
            f"Topic slug {topic_slug!r} must be letters and digits joined by single hyphens (at most 120 "
            "characters); slugify the topic, e.g. 'cache-invalidation'."
        )
    return topic_slug


def sha256_hex(name: str, value: object) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise InvalidInputError(f"The turn {name} must be 64 lowercase hex digits (a sha256); pass turn_digest().")
    return value


def encoded_event_data(event_type: str, data: object, close_run: bool) -> str:
    """The event data as JSON text, after checking that it fits the event type."""
    if event_type not in EVENT_TYPES:
        raise InvalidInputError(f"Unknown event type {event_type!r}; use one of {', '.join(sorted(EVENT_TYPES))}.")
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        raise InvalidInputError("Event data must be a JSON object with string keys; pass a dict such as {}.")
    try:
        encoded = json.dumps(data, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"Event data is not plain JSON ({exc}); pass only strings, numbers, lists, dicts."
        ) from exc
    if len(encoded.encode("utf-8")) > _MAX_EVENT_BYTES:
        raise InvalidInputError(f"Event data is larger than {_MAX_EVENT_BYTES} bytes; store large content in a file.")
    status = data.get("status") if isinstance(data.get("status"), str) else None  # a list is unhashable
    required = {"artifact_registered": "path", "btw_update": "message"}.get(event_type)
    if event_type == "status_change" and status not in RUN_STATUSES:
        raise InvalidInputError(
            f"A status_change event needs data.status set to one of {', '.join(sorted(RUN_STATUSES))}; add it."
        )
    if required is not None and not (isinstance(data.get(required), str) and data[required]):
        raise InvalidInputError(f"A {event_type} event needs a non-empty string data.{required}; add it.")
    if close_run and not (event_type == "status_change" and status in {"completed", "failed"}):
        raise InvalidInputError(
            "Only a status_change event with data.status completed or failed can close a run; fix the event."
        )
    return encoded
