"""A person writes a whole duel turn as one Markdown form, and the duel accepts what the form gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from engine_duel_helpers import guided
from test_engine_duel_driver import start

from moot.agents.human_form import FormError, form_of, read_form

FILLED = {
    "## stance": "DISSENTING",
    "## position": "A shared cache is cheaper, but one tenant's burst **evicts** everyone else's keys.",
    "#### addresses": "Turn 1",
    "#### claim": "Eviction by global LRU punishes the quiet tenants for the loud one.",
    "#### evidence.section": "Eviction",
    "#### evidence.principle": "Isolation bounds the worst case.",
    "## agreements": "- Pooling memory lowers the footprint.\n- One cluster is easier to run\n  than twelve.",
    "## novel_argument": "Billing per tenant needs per-tenant usage, which a shared cache does not measure.",
    "## novel_evidence.section": "Billing",
    "## novel_evidence.principle": "",
    "## limitation": "We have no traffic traces per tenant yet.",
    "## blocking_issues": "- A per-tenant memory floor is not designed.",
}


def fill(form: str, answers: dict[str, str]) -> str:
    """What a person does in the editor: write each answer under its heading, below the hint."""
    lines = form.splitlines()
    for heading, answer in answers.items():
        at = lines.index(heading) + 1
        lines.insert(at + 1, answer)
    return "\n".join(lines) + "\n"


def skeptic_turn_2(tmp_path: Path, source: Path):  # type: ignore[no-untyped-def]
    driver = start(tmp_path, source)
    driver.commit(driver.read_reply("advocate", guided(1, "OPEN_TO_DEBATE"), "t").turn)
    return driver, driver.request_for("skeptic").json_schema


def test_a_filled_form_makes_a_turn_the_duel_accepts(tmp_path: Path, source: Path) -> None:
    driver, schema = skeptic_turn_2(tmp_path, source)
    form = form_of(schema, "Your turn as skeptic (duel)")
    assert form is not None and "$defs" not in form and '"properties"' not in form
    assert "keep one of: Turn 1 | source § Shared cache across tenants" in form  # the choices, in words
    answer = read_form(fill(form, FILLED), schema)
    assert answer["agreements"] == ["Pooling memory lowers the footprint.", "One cluster is easier to run than twelve."]
    assert answer["counterpoints"][0]["evidence"] == {
        "section": "Eviction",
        "principle": "Isolation bounds the worst case.",
    }
    candidate = driver.read_reply("skeptic", json.dumps(answer), "t")
    assert not candidate.errors, candidate.errors
    driver.commit(candidate.turn)
    record = driver.record_path.read_text(encoding="utf-8")
    assert "one tenant's burst **evicts** everyone else's keys" in record
    assert "A per-tenant memory floor is not designed." in record


def test_a_second_item_block_is_a_second_counterpoint(tmp_path: Path, source: Path) -> None:
    _, schema = skeptic_turn_2(tmp_path, source)
    form = fill(form_of(schema, "t") or "", FILLED)
    block = (
        "\n### item\n#### addresses\nsource § Goals\n#### claim\nThe goals never name latency.\n"
        "#### evidence.section\nGoals\n#### evidence.principle\n\n"
    )
    form = form.replace("\n## agreements", block + "\n## agreements")
    answer = read_form(form, schema)
    assert [c["claim"] for c in answer["counterpoints"]][1] == "The goals never name latency."


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda f: f.replace("\nDISSENTING\n", "\nDISAGREE\n"), "stance is 'DISAGREE'; write one of OPEN_TO_DEBATE"),
        (lambda f: f.replace("## limitation\n", "## limitations\n"), "'## limitations' is not a field"),
        (lambda f: f.replace("## blocking_issues\n", ""), "the heading '## blocking_issues' is missing"),
    ],
)
def test_a_form_that_cannot_be_read_says_what_to_change(tmp_path: Path, source: Path, change, named) -> None:  # type: ignore[no-untyped-def]
    _, schema = skeptic_turn_2(tmp_path, source)
    form = change(fill(form_of(schema, "t") or "", FILLED))
    with pytest.raises(FormError, match=re.escape(named)):
        read_form(form, schema)
