"""Anonymity holds for every form of agent spec: a member's model, its server's URL and host, a model file's
name, the program a command runs. Reviewers are never shown them, and a review that names one is sent back
(and fails ``moot check``), in a council run by the engine with scripted members."""

from __future__ import annotations

import re
from pathlib import Path

from council_helpers import agents_for, checks_clean, legal, run, stage, start, stated

from moot.agents.base import AgentRequest
from moot.detect import check_path

# Each member's spec, and how its own answer gives away the model or server behind it.
SPECS = {
    "ada": ("openai:gpt-4o-mini@https://api.tenantcloud.example/v1", "gpt-4o-mini, served by tenantcloud"),
    "bo": ("ollama:llama3.1:8b", "llama3.1 here"),
    "cy": ("local:/models/qwen2.5-0.5b-instruct.gguf", "qwen2.5-0.5b-instruct on this laptop"),
    "dee": ("acp:codex --sandbox read-only", "codex, reading the repository"),
    "eve": ("cmd:python /opt/agents/cache_oracle.py", "cache_oracle.py, a scripted agent"),
}
REVEALED = ["gpt-4o-mini", "tenantcloud", "api.tenantcloud.example", "llama3.1", "qwen2.5-0.5b-instruct"]
REVEALED += ["codex", "cache_oracle.py", "cache_oracle", "/opt/agents/cache_oracle.py"]
MEMBERS = tuple((name, spec) for name, (spec, _) in SPECS.items())


def answering(request: AgentRequest) -> str:
    """Every answer says which model or agent wrote it; every other turn is legal."""
    if stage(request) == 1:
        return stated(
            request, {"answer": f"One shared cache with a per-tenant floor (so says {SPECS[request.role][1]})."}
        )
    return legal(request)


def test_no_reviewer_is_shown_any_part_of_a_members_spec(tmp_path: Path) -> None:
    driver = start(tmp_path, MEMBERS)
    agents = agents_for(driver, answering)
    result = run(driver, agents)
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED"
    reviews = [r for agent in agents.values() for r in agent.requests if stage(r) == 2]
    assert len(reviews) == len(SPECS)
    for request in reviews:
        shown = f"{request.system}\n{request.prompt}".lower()
        assert [part for part in REVEALED if part.lower() in shown] == [], request.prompt
        assert "per-tenant floor (so says [redacted]" in request.prompt
    checks_clean(driver.record_path)


def test_a_review_that_names_a_members_model_behind_a_base_url_is_sent_back_and_fails_check(tmp_path: Path) -> None:
    driver = start(tmp_path, MEMBERS)
    slips = {"bo": 1}

    def naming(request: AgentRequest) -> str:
        if stage(request) == 2 and slips.get(request.role):
            slips[request.role] -= 1
            labels = request.json_schema["properties"]["ranking"]["items"]["properties"]["answer"]["enum"]  # type: ignore[index]
            reason = "Typical of gpt-4o-mini: short and sure."
            return stated(request, {"ranking": [{"answer": label, "reason": reason} for label in labels]})
        return answering(request)

    agents = agents_for(driver, naming)
    result = run(driver, agents)
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED"
    bo = [r for r in agents["bo"].requests if stage(r) == 2]
    # Sent back with the rule, and without confirming the guess: what it named is redacted in the repair too.
    assert len(bo) == 2 and "COUNCIL_ANONYMITY" in bo[1].prompt and "Typical of [redacted]" in bo[1].prompt
    assert "gpt-4o-mini" not in bo[1].prompt
    record = driver.record_path
    text = record.read_text(encoding="utf-8")
    assert "Typical of gpt-4o-mini" not in text
    checks_clean(record)

    # A review in the record that names the model (written by hand, or by a moot that let it through) fails.
    reason = re.search(r"^(> )?.*is argued well\.", text, re.MULTILINE)
    assert reason is not None
    record.write_text(text.replace(reason[0], reason[0].replace("is argued well", "is gpt-4o-mini at its best"), 1))
    found = [v for v in check_path(record).violations if v.rule == "COUNCIL_ANONYMITY"]
    assert found and "gpt-4o-mini" in found[0].message
