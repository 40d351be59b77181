"""`moot receipt` and `moot verify`, as a user runs them, on a record written by a real debate."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forked_moot
from moot import cli


def reply(message: str, status: str = "AWAITING", summary: str = "") -> str:
    return json.dumps({"message": message, "status": status, "summary": summary})


def moot(*args: str, cwd: Path, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``moot ARGS`` as the user whose config directory (keys, trust list) is ``config`` (default: cwd/config)."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(config or cwd / "config")}
    return forked_moot.run(args, cwd=cwd, timeout=120, env=env)


def other_key(tmp_path: Path) -> tuple[Path, Path]:
    """Another signer's private key and its public half, as PEM files."""
    key = Ed25519PrivateKey.generate()
    private, public = tmp_path / "other.pem", tmp_path / "other.pub.pem"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


@pytest.fixture
def record(tmp_path: Path) -> Path:
    script = tmp_path / "script.jsonl"
    rows = [
        {"role": "proposer", "reply": reply("Move all services into one repository with one CI pipeline.")},
        {"role": "critic", "reply": reply("CI time grows with every service; how do you keep builds fast?")},
        {"role": "proposer", "reply": reply("Build only what changed, using the dependency graph.", "PROPOSING_DONE")},
        {"role": "critic", "reply": reply("Agreed.", "DONE", "One repository; builds scoped to changed services.")},
    ]
    script.write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = moot(
        "run", "critique", "--topic", "Adopt a monorepo", "--agents", f"script:{script}", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / json.loads(done.stdout)["artifact"]


def test_a_receipt_verifies_and_says_what_was_decided(tmp_path: Path, record: Path) -> None:
    made = moot("receipt", str(record), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    receipt_file = record.with_name(record.name + ".receipt.json")
    receipt = json.loads(receipt_file.read_text())
    assert receipt["format"] == "moot-receipt/1" and receipt["protocol"] == "critique"
    assert (
        receipt["outcome"]
        == {
            "name": "DONE",
            "consensus": True,
            "reason": receipt["outcome"]["reason"],
            "degraded": None,  # a whole debate: nothing is missing from it
        }
        and receipt["outcome"]["reason"]
    )
    assert receipt["record"]["turns"] == 4 and len(receipt["record"]["turn_digests"]) == 4
    assert receipt["record"]["chain_head"] and len(receipt["record"]["sha256"]) == 64
    roles = {p["role"]: p for p in receipt["participants"]}
    assert set(roles) == {"proposer", "critic"} and roles["critic"]["turns"] == 2
    assert len(roles["critic"]["models"]) == 1 and roles["critic"]["models"][0].startswith("script")
    key = tmp_path / "config" / "moot" / "receipt-key.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600  # made on first use, private
    assert receipt["signature"]["key_id"] in made.stdout

    checked = moot("verify", str(receipt_file), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "matches" in checked.stdout
    assert moot("verify", str(receipt_file), str(record), cwd=tmp_path).returncode == 0
    trusted = moot("verify", str(receipt_file), "--trust", str(key.with_name("receipt-key.pub.pem")), cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr


def test_a_council_receipt_signs_its_conformity_and_verify_shows_it(tmp_path: Path) -> None:
    agent = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"
    members = [arg for name in ("ada", "bo", "cy") for arg in ("--member", f"{name}={agent}")]
    done = moot("run", "council", "--question", "Share one cache?", *members, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout)
    record = tmp_path / ran["artifact"]
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    receipt_file = Path(str(record) + ".receipt.json")
    receipt = json.loads(receipt_file.read_text())
    # The receipt carries the record's conformity exactly as the run reported it.
    conformity = receipt["metrics"]["conformity"]
    assert conformity == ran["conformity"] and conformity["answer"]["total_changes"] >= 2
    checked = moot("verify", str(receipt_file), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    answer = conformity["answer"]
    assert f"conformity answer: {answer['total_changes']} position change(s)" in checked.stdout
    assert "outcome: SYNTHESIZED" in checked.stdout
    # The metrics are signed: a receipt whose metrics were edited fails.
    receipt["metrics"]["conformity"]["answer"]["total_changes"] = 0
    receipt_file.write_text(json.dumps(receipt, indent=2))
    edited = moot("verify", str(receipt_file), cwd=tmp_path)
    assert edited.returncode == 1 and "signature does not match its contents" in edited.stderr


def test_an_edited_record_fails_naming_the_turn(tmp_path: Path, record: Path) -> None:
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    text = record.read_text()
    record.write_text(text.replace("how do you keep builds fast?", "builds will be fast."))
    checked = moot("verify", str(record) + ".receipt.json", cwd=tmp_path)
    assert checked.returncode == 1
    assert "was edited after the receipt was issued" in checked.stderr and "turn(s) 2" in checked.stderr


def test_an_edited_header_fails_too(tmp_path: Path, record: Path) -> None:
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    record.write_text(record.read_text().replace("Adopt a monorepo", "Adopt a polyrepo", 1))
    checked = moot("verify", str(record) + ".receipt.json", cwd=tmp_path)
    assert checked.returncode == 1 and "outside the signed turns" in checked.stderr


def test_an_edited_receipt_fails(tmp_path: Path, record: Path) -> None:
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    receipt_file = Path(str(record) + ".receipt.json")
    receipt = json.loads(receipt_file.read_text())
    receipt["outcome"]["name"] = "MAX_ROUNDS"
    receipt_file.write_text(json.dumps(receipt, indent=2))
    checked = moot("verify", str(receipt_file), cwd=tmp_path)
    assert checked.returncode == 1 and "signature does not match its contents" in checked.stderr


def test_a_receipt_re_signed_by_another_key_fails_unless_that_key_is_trusted(tmp_path: Path, record: Path) -> None:
    private, public = other_key(tmp_path)
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0  # makes the user's own key
    own = tmp_path / "config" / "moot" / "receipt-key.pub.pem"
    # Anyone can sign a receipt with a key of their own: a valid signature alone proves nothing.
    assert moot("receipt", str(record), "--key", str(private), cwd=tmp_path).returncode == 0
    receipt_file = str(record) + ".receipt.json"
    checked = moot("verify", receipt_file, cwd=tmp_path)
    assert checked.returncode == 1 and "matches" not in checked.stdout
    assert len(checked.stderr.strip().splitlines()) == 1
    assert "neither your own key nor in" in checked.stderr and "--trust" in checked.stderr
    pinned = moot("verify", receipt_file, "--trust", str(own), cwd=tmp_path)
    assert pinned.returncode == 1 and "not by the trusted key" in pinned.stderr
    # Trusted once: with --trust, or in the user's trust list.
    trusted = moot("verify", receipt_file, "--trust", str(public), cwd=tmp_path)
    assert trusted.returncode == 0 and "matches" in trusted.stdout and "--trust" in trusted.stdout
    listed = tmp_path / "config" / "moot" / "trusted-receipt-keys"
    listed.mkdir()
    (listed / "other.pem").write_bytes(public.read_bytes())
    in_list = moot("verify", receipt_file, cwd=tmp_path)
    assert in_list.returncode == 0 and "trusted in" in in_list.stdout, in_list.stderr
    # A file in the trust list that is no key is a usage error that names it.
    (listed / "notes.pem").write_text("not a key\n")
    broken = moot("verify", receipt_file, cwd=tmp_path)
    assert broken.returncode == 2 and "notes.pem" in broken.stderr and "remove it" in broken.stderr


def test_a_verifier_with_no_key_of_its_own_trusts_only_what_it_is_given(tmp_path: Path, record: Path) -> None:
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    receipt_file = str(record) + ".receipt.json"
    elsewhere = tmp_path / "another-user"
    checked = moot("verify", receipt_file, cwd=tmp_path, config=elsewhere)
    assert checked.returncode == 1 and "neither your own key" in checked.stderr
    assert not (elsewhere / "moot").exists()  # verifying makes no key
    own = tmp_path / "config" / "moot" / "receipt-key.pub.pem"
    assert moot("verify", receipt_file, "--trust", str(own), cwd=tmp_path, config=elsewhere).returncode == 0


def test_only_ed25519_and_the_signing_keys_own_key_id_are_accepted(tmp_path: Path, record: Path) -> None:
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    receipt_file = Path(str(record) + ".receipt.json")
    signed = json.loads(receipt_file.read_text())
    # The signature object is not itself signed: each of its fields must agree with the key that signed.
    for field, value, said in (
        ("algorithm", "RSA-PSS", "moot accepts only Ed25519 receipts"),
        ("algorithm", None, "moot accepts only Ed25519 receipts"),
        ("key_id", "0123456789abcdef", "names key_id '0123456789abcdef'"),
        ("key_id", signed["signature"]["key_id"].upper(), "the receipt was edited"),
    ):
        edited = {**signed, "signature": {**signed["signature"], field: value}}
        receipt_file.write_text(json.dumps(edited))
        checked = moot("verify", str(receipt_file), cwd=tmp_path)
        assert checked.returncode == 1 and said in checked.stderr, (field, value, checked.stderr)
        assert len(checked.stderr.strip().splitlines()) == 1


def test_usage_errors_exit_2_with_one_sentence(tmp_path: Path, record: Path) -> None:
    missing = moot("verify", str(tmp_path / "nope.receipt.json"), cwd=tmp_path)
    assert missing.returncode == 2 and "check the path" in missing.stderr and "Traceback" not in missing.stderr
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    bad_trust = moot("verify", str(record) + ".receipt.json", "--trust", str(tmp_path / "none.pem"), cwd=tmp_path)
    assert bad_trust.returncode == 2 and "--trust" in bad_trust.stderr
    not_a_record = tmp_path / "notes.md"
    not_a_record.write_text("hello\n")
    refused = moot("receipt", str(not_a_record), cwd=tmp_path)
    assert refused.returncode == 2 and "cannot make a receipt" in refused.stderr


def test_a_meeting_directory_gets_a_receipt_and_an_edited_speech_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from moot.agents import AgentRequest, FunctionAgent
    from moot.engine.loop import Engine
    from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions
    from moot.receipts import build_receipt, load_or_create_key, receipt_path, verify

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def speak(request: AgentRequest) -> str:
        if request.role == "moderator":
            return json.dumps(
                {
                    "summary": "Caching discussed.",
                    "consensus": "Cache reads.",
                    "unresolved": "None.",
                    "action_items": "- a",
                }
            )
        return json.dumps(
            {
                "position": f"{request.role} favours caching reads.",
                "analysis": "Reads dominate the load.",
                "responses_and_questions": "How long should entries live?",
                "prompt_for_next_speaker": "Say what TTL you accept.",
                "consensus_reached": False,
            }
        )

    driver = RoundtableDriver.start(
        tmp_path,
        RoundtableOptions(speakers=("architect", "reviewer"), topic="Cache reads?", max_rounds=1),
        "2026-05-01 10:00",
    )
    agent = FunctionAgent(speak)
    asyncio.run(Engine(driver, dict.fromkeys(driver.roles(), agent)).run())
    meeting = driver.record_path
    receipt = build_receipt(meeting, load_or_create_key(None))
    assert receipt["protocol"] == "roundtable" and receipt["record"]["kind"] == "directory"
    target = receipt_path(meeting)
    target.write_text(json.dumps(receipt))
    assert verify(target).ok
    speech = sorted(meeting.glob("[0-9][0-9][0-9]_*.md"))[0]
    speech.write_text(speech.read_text().replace("favours caching reads", "opposes caching"))
    verdict = verify(target)
    assert not verdict.ok and "was edited after the receipt was issued" in verdict.message
    assert "turn(s) 1 no longer match" in verdict.message


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def test_verify_answers_any_receipt_file_with_a_sentence_and_exit_1(
    tmp_path: Path, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damaged or forged receipts never crash moot verify: one sentence, exit 1."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the signer's own key is trusted
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    signed = json.loads(Path(str(record) + ".receipt.json").read_text())
    target = tmp_path / "fuzzed.receipt.json"

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        body=JSON_VALUES
        | st.dictionaries(st.sampled_from(sorted(signed)), JSON_VALUES).map(lambda patch: {**signed, **patch}),
        raw=st.binary(max_size=60),
        use_raw=st.booleans(),
    )
    def check(body: object, raw: bytes, use_raw: bool) -> None:
        target.write_bytes(raw if use_raw else json.dumps(body).encode())
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                cli.main(["verify", str(target), str(record)])
                code = 0
            except SystemExit as exit_:
                code = int(exit_.code or 0)
        patched_only_nothing = not use_raw and body == signed
        assert code == (0 if patched_only_nothing else 1), err.getvalue()
        assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue()

    check()
