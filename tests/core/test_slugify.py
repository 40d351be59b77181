"""File names made from a subject: safe, capped, and cheap for any length of topic."""

from __future__ import annotations

import threading

from moot.core.files import MAX_SLUG_BYTES, slugify


def test_a_megabyte_topic_gets_its_capped_slug_at_once() -> None:
    topic = "Should every tenant share one cache, or each get its own? " * 18_000  # about 1 MB
    slugs: list[str] = []
    worker = threading.Thread(target=lambda: slugs.append(slugify(topic, "debate")), daemon=True)
    worker.start()
    worker.join(timeout=30)  # a cut one character at a time took minutes
    assert slugs, "slugify did not finish on a 1 MB topic"
    assert slugs[0] == slugify(topic[:400], "debate")
    assert slugs[0].startswith("should-every-tenant-share-one-cache-or-each-get-its-own-should")
    assert len(slugs[0].encode()) <= MAX_SLUG_BYTES and not slugs[0].endswith("-")


def test_a_slug_is_cut_at_a_character_boundary() -> None:
    assert slugify("é" * 500, "x", max_bytes=7) == "ééé"
    assert slugify("ab " * 100, "x", max_bytes=5) == "ab-ab"
    assert slugify("!!!" * 1000, "fallback") == "fallback"
