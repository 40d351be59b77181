"""A scripted participant that gives a legal turn in any state of any of moot's four protocols.

Its reply is derived from the request alone (the turn number or round in the prompt, the legal
choices in the reply's JSON Schema), never from a queue position, so it answers the same after
``moot resume`` as it would have in an uninterrupted run: a killed and resumed debate must end
with exactly the turns of an unkilled one.

Two uses:

- ``cmd:python protocol_agent.py`` (the crash test): moot's CommandAgent sends the prompt on stdin
  and MOOT_PROTOCOL, MOOT_ROLE and MOOT_JSON_SCHEMA in the environment (src/moot/agents/cmd.py).
  ``MOOT_TEST_AGENT_SLEEP=MAX_S:SEED`` makes it sleep a pseudo-random 0..MAX_S seconds first (a
  function of the seed, the role and the prompt), so a kill can land inside an agent call.
- ``legal_reply(request)`` from a FunctionAgent (the soak test), in-process.

Standard library only: the script starts in tens of milliseconds, once per turn.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import time
from typing import Any

SLEEP_ENV = "MOOT_TEST_AGENT_SLEEP"
ASKED_ENV = "MOOT_TEST_AGENT_ASKED"  # a file that gets one line per request: the role, then the reply's keys

# The duel refuses a novel argument that repeats an earlier one, so each turn (at most 6) has its own.
DUEL_NOVEL = (
    "A per-tenant floor bounds the worst-case hit rate of quiet tenants.",
    "Separate caches make per-tenant memory billing exact.",
    "A shared overflow sized at ten percent keeps most of the pooling gain.",
    "Regulated tenants can opt out of the overflow by default.",
    "The overflow cap can reuse the existing quota setting.",
    "Rolling out behind a per-tenant flag allows a before-and-after comparison.",
)
# Agora: turns up to this number propose or counter, so the debate deadlocks, the mediator is
# recruited and proposes, and the drones then approve its compromise (consensus).
AGORA_LAST_COUNTER = 6
AGORA_EVIDENCE = {"source": "build logs", "content": "CI takes 6 minutes per repository", "confidence": 0.8}


def legal_reply(protocol: str, role: str, schema: dict[str, Any], prompt: str) -> str:
    """The JSON turn ``role`` gives now; ``prompt`` is the whole request text (system and prompt)."""
    reply = {
        "critique": _critique,
        "duel": _duel,
        "agora": _agora,
        "roundtable": _roundtable,
        "council": _council,
        "auto": _auto,
    }[protocol]
    return json.dumps(reply(role, schema, prompt))


# Real-length turns, as moot's dry run assumes a capable model writes them: about 300 words for a turn's main text
# (its first free text), a sentence or two for every other one; a patterned text as long as its pattern allows.
# Only free texts are lengthened, so the turn stays as legal as the short one.
LONG_WORDS, SHORT_WORDS = 300, 30
FREE_TEXTS = frozenset(
    {"message", "position", "analysis", "responses_and_questions", "answer", "reasoning", "reason", "claim"}
    | {"why_not_adopted"}
    | {"summary", "consensus", "unresolved", "action_items", "limitation", "novel_argument", "basis"}
)
SENTENCES = (
    "Tenant isolation bounds the worst case, and that is the property our users notice first.",
    "Pooling memory lowers the footprint, but only while no single tenant can take the whole pool.",
    "The numbers from last quarter show that scans by one tenant caused most of the latency spikes.",
    "A floor per tenant costs little memory and removes the failure we have actually seen.",
    "Billing per tenant stays exact if every entry is charged to the tenant that inserted it.",
    "The migration can be reversible: keep the old eviction path behind a flag for a release.",
    "We should measure hit rates per tenant before and after, and publish both in the design review.",
    "The strongest objection is operational: one more setting to size, and one more to get wrong.",
    "A default derived from each tenant's traffic answers that objection for most tenants.",
    "Regulated tenants may still want a cache of their own, and the design should allow it.",
    "None of this is free, and the honest comparison is with the incidents we already live with.",
    "What would change my mind is evidence that the spikes have another cause than eviction.",
)


def real_length_reply(protocol: str, role: str, schema: dict[str, Any], prompt: str) -> str:
    """:func:`legal_reply` with its free texts as long as a capable model writes them (see ``LONG_WORDS``), from a
    pool of sentences rotated by the prompt, so that no two turns say the same."""
    turn = json.loads(legal_reply(protocol, role, schema, prompt))
    seed = int(hashlib.sha256(f"{role}\n{prompt}".encode()).hexdigest(), 16)
    return json.dumps(_lengthened(turn, schema.get("properties", {}), seed, schema.get("$defs", {}), [True]))


def _lengthened(value: Any, properties: dict[str, Any], seed: int, defs: dict[str, Any], main: list[bool]) -> Any:
    """``value`` with its free texts lengthened; ``main`` holds whether the main text is still to be written."""
    if isinstance(value, list):
        return [_lengthened(item, properties, seed + index, defs, main) for index, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    found = {}
    for name, item in value.items():
        schema = properties.get(name, {})
        if isinstance(item, str):
            found[name] = _longer(item, schema, seed + len(name), main) if name in FREE_TEXTS else item
            continue
        inner = schema.get("items", schema)
        inner = defs.get(str(inner.get("$ref", "")).rsplit("/", 1)[-1], inner).get("properties", {})
        found[name] = _lengthened(item, inner, seed + 1, defs, [False])
    return found


def _longer(text: str, schema: dict[str, Any], seed: int, main: list[bool]) -> str:
    if not text or "enum" in schema:
        return text
    words = LONG_WORDS if main[0] and "pattern" not in schema else SHORT_WORDS
    main[0] = main[0] and words == SHORT_WORDS
    longer = f"{text} {_prose(seed, words)}"[: schema.get("maxLength")]
    pattern = schema.get("pattern")
    while pattern and longer != text and not re.search(pattern, longer):
        longer = longer[:-10].rstrip() if len(longer) > len(text) + 10 else text
    return longer


def _prose(seed: int, words: int) -> str:
    out: list[str] = []
    while sum(len(sentence.split()) for sentence in out) < words:
        out.append(SENTENCES[(seed + 5 * len(out)) % len(SENTENCES)])
    return " ".join(out)


def _number(pattern: str, prompt: str) -> int:
    found = re.search(pattern, prompt)
    if found is None:
        raise ValueError(f"the prompt has no {pattern!r}")
    return int(found.group(1))


def _critique(role: str, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """AWAITING each round; the first speaker of the last round proposes done and the other confirms."""
    found = re.search(r"for round (\d+) of (\d+)", prompt)
    if found is None:
        raise ValueError("the critique prompt names no round")
    round_, max_rounds = int(found.group(1)), int(found.group(2))
    allowed = schema["properties"]["status"]["enum"]
    if len(allowed) == 4:  # a schema kept the same across turns: the dialogue so far says what is legal now
        last = re.findall(r"^Status: (\S+)", prompt, re.M)
        allowed = ["DONE"] if last and last[-1] == "PROPOSING_DONE" else ["AWAITING", "PROPOSING_DONE"]
    if "DONE" in allowed:
        status = "DONE"
    elif "PROPOSING_DONE" in allowed and round_ == max_rounds:
        status = "PROPOSING_DONE"
    else:
        status = "AWAITING"
    summary = f"Agreed in round {round_}: the plan as proposed." if status == "DONE" else ""
    return {"message": f"The {role} answers in round {round_}: the plan holds.", "status": status, "summary": summary}


def _duel(role: str, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """OPEN_TO_DEBATE, then CONVERGING, then ACCEPTING_CONSENSUS in the last two turns."""
    number = _number(r"Write turn (\d+) of at most", prompt)
    max_turns = _number(r"Write turn \d+ of at most (\d+)", prompt)
    defs = schema["$defs"]
    stances = schema["properties"]["stance"]["enum"]
    section = defs["Evidence"]["properties"]["section"]["enum"][0]
    # A schema kept the same across turns (a prefix-caching server's) offers every choice: the duel opens open.
    addresses = defs["GuidedCounterpoint"]["properties"]["addresses"]
    addressable = addresses.get("enum") or [f"source § {section}"]
    wanted = "ACCEPTING_CONSENSUS" if number >= max_turns - 1 else "CONVERGING" if number > 1 else "OPEN_TO_DEBATE"
    reply: dict[str, Any] = {
        "stance": wanted if wanted in stances else stances[0],
        "position": f"Position {number} of {role}: the shared cache needs a per-tenant floor.",
        "counterpoints": [
            {
                "addresses": f"Turn {number - 1}" if number > 1 else addressable[0],
                "claim": f"Counterclaim {number}: one noisy tenant evicts the others.",
                "evidence": {"section": section, "principle": "isolation bounds the worst case"},
            }
        ],
        "agreements": [f"Agreement {number}: pooling lowers the footprint."],
        "novel_argument": DUEL_NOVEL[(number - 1) % len(DUEL_NOVEL)],
        "novel_evidence": {"section": section, "principle": ""},
        "limitation": f"Benchmarks for turn {number} are missing",
        "blocking_issues": [],
    }
    if "stance_revision" in schema["properties"]:
        reply["stance_revision"] = {"because_of": f"Turn {number - 1}", "why": f"turn {number - 1} answered me"}
    return reply


def _agora(role: str, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    properties = schema["properties"]
    if "signal" not in properties:  # a research drone
        return {"evidence": [AGORA_EVIDENCE]}
    number = _number(r"TURN: (\d+)", prompt)
    signals = properties["signal"]["enum"]
    # A schema that allows no target (a first turn, a sealed opening) gets none; one kept the same across turns
    # for a caching server names no targets, so a counter disputes the turn before it.
    target = properties["target"]
    unnamed = [f"turn-{number - 1}" if number > 1 and target.get("type") != "null" else None]
    targets = target.get("enum") or unnamed
    if role == "mediator":
        preferred = ["propose", "no-change"]
    elif number <= 2:
        preferred = ["propose"]
    elif number <= AGORA_LAST_COUNTER:
        preferred = ["counter"]
    else:
        preferred = ["approve", "no-change"]
    signal = next((s for s in preferred if s in signals), signals[0])
    evidence = [AGORA_EVIDENCE] * properties["evidence"].get("minItems", 0)
    if "AGORA_STANCE_REASON" in prompt:  # sent back for changing its stance without a reason: give a new one
        evidence = [{"source": "review notes", "content": f"turn {number}: {role} weighed it", "confidence": 0.7}]
    return {
        "signal": signal,
        "message": f"Turn {number}: {role} signals {signal}. The reasons stand.",
        "confidence": 0.7,
        "target": targets[0],
        "evidence": evidence,
    }


def _roundtable(role: str, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    properties = schema["properties"]
    if "summary" in properties:  # the moderator's minutes
        return {
            "summary": "The speakers discussed the cache design.",
            "consensus": "A per-tenant floor.",
            "unresolved": "None.",
            "action_items": "- architect: write the design.",
        }
    # The round in the position: a speech that repeats an earlier one word for word is a ROUNDTABLE_ECHO.
    found = re.search(r"round (\d+) of \d+|第 (\d+) 轮", prompt)
    round_ = f" in round {found.group(1) or found.group(2)}" if found else ""
    return {
        "position": f"{role} supports a per-tenant floor{round_}.",
        "analysis": "Isolation bounds the worst case while pooling keeps memory low.",
        "responses_and_questions": "Which tenants need the strictest floor?",
        "prompt_for_next_speaker": "Name the risk you see first.",
        "consensus_reached": False,
    }


def _stated(reply: dict[str, Any], schema: dict[str, Any], confidence: float) -> dict[str, Any]:
    """``reply`` with a confidence where the schema asks for one (a council's answers and reviews)."""
    return {**reply, "confidence": confidence} if "confidence" in schema["properties"] else reply


def _council(role: str, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """An answer (stage 1), a ranking in label order (stage 2), a synthesis naming the top member (stage 3)."""
    properties = schema["properties"]
    if "ranking" in properties:
        labels = properties["ranking"]["items"]["properties"]["answer"]["enum"]
        ranking = [{"answer": label, "reason": f"{label} weighs the trade-offs I care about."} for label in labels]
        return _stated({"ranking": ranking}, schema, 0.7)
    if "dissent" in properties:
        top = _word(r"name the top-ranked member, ([\w-]+)\.", prompt)
        others = properties["dissent"]["items"]["properties"]["member"]["enum"]
        return {
            "answer": "Keep one shared cache with a per-tenant floor, as the top-ranked answer says.",
            "basis": f"The reviews ranked {top} first; its floor is the core of this answer.",
            "dissent": [
                {"member": m, "position": "separate caches per tenant", "why_not_adopted": "it doubles memory"}
                for m in others
            ],
        }
    answer = f"A shared cache with a per-tenant floor, as {role} sees it: isolation bounds the worst case."
    return _stated({"answer": answer}, schema, 0.8)


def _auto(role: str, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """A sealed answer with a short final answer (member ``cy`` alone says 13, so an unanimous vote escalates); the
    council's review and synthesis when the vote escalated."""
    if "final_answer" in schema["properties"]:
        answer = "13" if role == "cy" else "12"
        reply = {"reasoning": f"Counting every week of the period, {role} finds {answer}.", "final_answer": answer}
        return _stated(reply, schema, 0.8)
    return _council(role, schema, prompt)


def _word(pattern: str, prompt: str) -> str:
    found = re.search(pattern, prompt)
    if found is None:
        raise ValueError(f"the prompt has no {pattern!r}")
    return found.group(1)


def _sleep_before_reply(prompt: str) -> None:
    setting = os.environ.get(SLEEP_ENV)
    if not setting:
        return
    max_s, _, seed = setting.partition(":")
    # The role too: a council's members get the same prompt, and must not all answer at the same moment.
    digest = hashlib.sha256(f"{seed}\n{os.environ.get('MOOT_ROLE', '')}\n{prompt}".encode()).hexdigest()
    time.sleep(random.Random(digest).uniform(0, float(max_s)))


def main() -> None:
    prompt = sys.stdin.read()
    schema = json.loads(os.environ["MOOT_JSON_SCHEMA"])
    if os.environ.get(ASKED_ENV):  # as soon as asked, so a kill of moot while this one sleeps still counts it
        with open(os.environ[ASKED_ENV], "a", encoding="utf-8") as asked:
            asked.write(" ".join([os.environ["MOOT_ROLE"], *sorted(schema["properties"])]) + "\n")
    _sleep_before_reply(prompt)
    print(legal_reply(os.environ["MOOT_PROTOCOL"], os.environ["MOOT_ROLE"], schema, prompt))


if __name__ == "__main__":
    main()
