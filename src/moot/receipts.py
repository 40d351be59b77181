"""Signed decision receipts: what a record decided, in one JSON file anyone can verify offline.

A receipt holds the record's digest and chain head, its outcome and reason, the participants and
their models (from the usage log beside the record), its conformity metrics (as ``moot show --json``
reports them), tokens and times, and an Ed25519 signature
over all of that (the canonical JSON of every field but ``signature``). It carries its public key, which
proves only that *someone* signed it: :func:`verify` accepts a receipt only from a key the verifier
trusts (:class:`Trust`): their own key and the keys in their trust list, or only the keys given with
``--trust``. The format is described in docs/formats.md.

The signing key is made on first use in the user's config directory
(``$XDG_CONFIG_HOME/moot/receipt-key.pem``, mode 0600) with its public half beside it
(``receipt-key.pub.pem``), which is the file to hand to whoever verifies; they trust it by passing it to
``--trust`` or by copying it into their ``$XDG_CONFIG_HOME/moot/trusted-receipt-keys/``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.conformity import conformity_json, summary_line
from moot.core.chain import read_chain
from moot.detect import check_path, detect
from moot.engine.loop import usage_path
from moot.errors import UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

FORMAT = "moot-receipt/1"
ALGORITHM = "Ed25519"
KEY_NAME = "receipt-key.pem"
PUBLIC_KEY_NAME = "receipt-key.pub.pem"
TRUSTED_KEYS_DIR = "trusted-receipt-keys"  # in the config directory: one PEM public key per file
RECEIPTS_INSTALL = "pip install 'moot[receipts]'"


def receipt_path(record: Path) -> Path:
    """Where a record's receipt goes by default: ``NAME.receipt.json`` beside it."""
    record = record.resolve()
    return record.with_name(f"{record.name}.receipt.json")


def config_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "moot"


def default_key_path() -> Path:
    return config_dir() / KEY_NAME


def trusted_keys_dir() -> Path:
    """The verifier's trust list: every ``*.pem`` public key in it may sign the receipts they accept."""
    return config_dir() / TRUSTED_KEYS_DIR


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:
        raise UserError(f"receipts need the cryptography package: run {RECEIPTS_INSTALL}.") from exc
    return serialization, ed25519


def load_or_create_key(path: Path | None) -> Ed25519PrivateKey:
    """The signing key at ``path`` (given with --key, so it must exist), or the default one, made on first use."""
    serialization, ed25519 = _crypto()
    if path is None:
        path = default_key_path()
        if not path.exists():
            _create_key(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read the key {path} ({exc.strerror}); check the path given to --key.") from exc
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise UserError(f"{path} is not an unencrypted PEM private key; give an Ed25519 key made by moot.") from exc
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise UserError(f"{path} is not an Ed25519 key; receipts are signed with Ed25519 only.")
    signing_key: Ed25519PrivateKey = key
    return signing_key


def _create_key(path: Path) -> None:
    serialization, ed25519 = _crypto()
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never readable by others
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    path.with_name(PUBLIC_KEY_NAME).write_bytes(public)


def _raw_public(key: Ed25519PublicKey) -> bytes:
    serialization, _ = _crypto()
    raw: bytes = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw


def load_trusted_key(path: Path, fix: str = "give the signer's receipt-key.pub.pem to --trust") -> bytes:
    """The raw public key in a PEM file: a public key, or a private key whose public half is meant.

    ``fix`` ends the sentence when the file is not such a key (it depends on where the file was named)."""
    serialization, ed25519 = _crypto()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read the trusted key {path} ({exc.strerror}); {fix}.") from exc
    try:
        key: Any = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        try:
            key = serialization.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError) as exc:
            raise UserError(f"{path} is not a PEM key; {fix}.") from exc
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise UserError(f"{path} is not an Ed25519 key (receipts are signed with Ed25519 only); {fix}.")
    return _raw_public(key)


def key_id(raw_public: bytes) -> str:
    return hashlib.sha256(raw_public).hexdigest()[:16]


@dataclass(frozen=True)
class Trust:
    """The public keys a verifier accepts a receipt from, each with where the trust comes from."""

    keys: dict[bytes, str]  # raw public key -> its origin, as the verdict names it
    pinned: bool = False  # given with --trust: these keys only

    @classmethod
    def given(cls, paths: Sequence[Path]) -> Trust:
        """Only the keys in ``paths`` (``--trust``)."""
        return cls({load_trusted_key(path): f"trusted with --trust {path}" for path in paths}, pinned=True)

    @classmethod
    def default(cls) -> Trust:
        """The verifier's own key (if it has made one) and every key in its trust list."""
        keys: dict[bytes, str] = {}
        own = default_key_path()
        if own.is_file():
            keys[_raw_public(load_or_create_key(own).public_key())] = "your own key"
        listed = trusted_keys_dir()
        for path in sorted(listed.glob("*.pem")) if listed.is_dir() else []:
            replace = f"replace it with a signer's receipt-key.pub.pem or remove it from {listed}"
            keys.setdefault(load_trusted_key(path, replace), f"trusted in {path}")
        return cls(keys)

    def refusal(self, receipt_file: Path, signer: str) -> str:
        """Why a receipt signed by ``signer`` is not accepted, and how to trust its signer."""
        if self.pinned:
            given = ", ".join(key_id(key) for key in self.keys)
            return (
                f"{receipt_file} is signed by key {signer}, not by the trusted key {given} given with --trust; "
                "verify it with its signer's receipt-key.pub.pem."
            )
        return (
            f"{receipt_file} is signed by key {signer}, which is neither your own key nor in {trusted_keys_dir()}; "
            "if you trust its signer, pass their receipt-key.pub.pem with --trust or copy it into that directory."
        )


def canonical(payload: dict[str, Any]) -> bytes:
    """The signed bytes: the receipt without its signature, as sorted, compact UTF-8 JSON."""
    body = {key: value for key, value in payload.items() if key != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def record_digest(target: Path) -> str:
    """sha256 of a file record's bytes; of a meeting directory, over each visible file's name and digest."""
    if target.is_file():
        return hashlib.sha256(target.read_bytes()).hexdigest()
    listing = hashlib.sha256()
    for file in sorted(p for p in target.rglob("*") if p.is_file()):
        relative = file.relative_to(target).as_posix()
        if any(part.startswith(".") for part in relative.split("/")):
            continue  # sidecars (chain, usage, locks) are not the record
        listing.update(f"{relative}\0{hashlib.sha256(file.read_bytes()).hexdigest()}\n".encode())
    return listing.hexdigest()


def _turn_digests(target: Path) -> list[str]:
    rows, _ = read_chain(target)
    return [str(row["digest"]) for row in rows or []]


def _participants(target: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per role: models, accepted turns, attempts and tokens, from the usage log; and the totals."""
    roles: dict[str, dict[str, Any]] = {}
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0}
    path = usage_path(target)
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn last line from a killed run
        if not isinstance(row, dict) or not isinstance(row.get("role"), str):
            continue
        entry = roles.setdefault(
            row["role"],
            {"role": row["role"], "models": [], "turns": 0, "attempts": 0, "prompt_tokens": 0, "completion_tokens": 0},
        )
        model = str(row.get("model", ""))
        if model and model not in entry["models"]:
            entry["models"].append(model)
        entry["attempts"] += 1
        entry["turns"] += 1 if row.get("accepted") else 0
        for name in ("prompt_tokens", "completion_tokens"):
            value = int(row.get(name) or 0)
            entry[name] += value
            totals[name] += value
        totals["latency_s"] += float(row.get("latency_s") or 0.0)
    totals["latency_s"] = round(totals["latency_s"], 3)
    return list(roles.values()), totals


def _checked(record: Path) -> tuple[str, Path, Any]:
    protocol, target, problem = detect(record)
    if problem is not None or protocol is None:
        reason = problem.violations[0].message if problem is not None and problem.violations else "unknown format"
        raise UserError(f"cannot make a receipt for {record}: {reason}")
    return protocol, target, check_path(target)


def build_receipt(record: Path, key: Ed25519PrivateKey, now: datetime | None = None) -> dict[str, Any]:
    """The signed receipt of a valid record."""
    protocol, target, report = _checked(record)
    if report.errors:
        raise UserError(
            f"{record} breaks the protocol ({report.errors[0]}); a receipt vouches only for a valid record: "
            "run moot check and fix it."
        )
    summary = report.summary
    outcome = summary.outcome if summary is not None else None
    participants, totals = _participants(target)
    chain = _turn_digests(target)
    chain_rows, _ = read_chain(target)
    raw_public = _raw_public(key.public_key())
    receipt: dict[str, Any] = {
        "format": FORMAT,
        "protocol": protocol,
        "record": {
            "name": target.name,
            "kind": "directory" if target.is_dir() else "file",
            "sha256": record_digest(target),
            "turns": summary.turns if summary is not None else 0,
            "chain_head": str(chain_rows[-1]["chain"]) if chain_rows else None,
            "turn_digests": chain,
        },
        "outcome": {
            "name": outcome.name if outcome is not None else None,
            "consensus": bool(outcome and outcome.consensus),
            "reason": outcome.reason if outcome is not None else None,
            "degraded": outcome.degraded if outcome is not None else None,
        },
        "participants": participants,
        "metrics": {"conformity": conformity_json(target)},
        "tokens": {"prompt": totals["prompt_tokens"], "completion": totals["completion_tokens"]},
        "times": {
            "issued_at": (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "agent_latency_s": totals["latency_s"],
        },
    }
    signature = key.sign(canonical(receipt))
    receipt["signature"] = {
        "algorithm": ALGORITHM,
        "public_key": base64.b64encode(raw_public).decode("ascii"),
        "key_id": key_id(raw_public),
        "value": base64.b64encode(signature).decode("ascii"),
    }
    return receipt


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str  # one sentence: what was checked, or what differs
    details: tuple[str, ...] = ()  # what the verified receipt vouches for, a line each


def vouched(receipt: dict[str, Any]) -> tuple[str, ...]:
    """The signed outcome and conformity metrics of a verified receipt, for a person reading the verdict."""
    outcome = receipt.get("outcome") or {}
    lines = [f"outcome: {outcome.get('name')} ({outcome.get('reason')})"] if outcome.get("name") else []
    if outcome.get("degraded"):
        lines.append(f"degraded: {outcome['degraded']}")
    conformity = (receipt.get("metrics") or {}).get("conformity") or {}
    lines += [f"conformity {summary_line(what, data)}" for what, data in conformity.items()]
    return tuple(lines)


def read_receipt(path: Path) -> dict[str, Any]:
    """The receipt at ``path``; a missing file is a usage error, a damaged one a failed verification."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read the receipt {path} ({exc.strerror}); check the path.") from exc
    try:
        receipt = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8 or not JSON: damaged
        return {}
    return receipt if isinstance(receipt, dict) else {}


def verify(receipt_file: Path, record: Path | None = None, trust: Trust | None = None) -> Verdict:
    """Check the signature and that a trusted key made it (``trust``, else :meth:`Trust.default`), then the
    record against the receipt."""
    receipt = read_receipt(receipt_file)
    signature = receipt.get("signature")
    if receipt.get("format") != FORMAT or not isinstance(signature, dict):
        return Verdict(False, f"{receipt_file} is not a moot receipt ({FORMAT}): it is damaged or was edited.")
    checked = _signer(receipt_file, receipt, signature)
    if isinstance(checked, Verdict):
        return checked
    trust = trust if trust is not None else Trust.default()
    signer = key_id(checked)
    origin = trust.keys.get(checked)
    if origin is None:
        return Verdict(False, trust.refusal(receipt_file, signer))
    fields = receipt.get("record")
    if not isinstance(fields, dict) or not isinstance(fields.get("name"), str):
        return Verdict(False, f"{receipt_file} names no record: it was not made by moot receipt.")
    target = record if record is not None else receipt_file.resolve().parent / fields["name"]
    if not _exists(target):
        raise UserError(f"the record {target} does not exist; give its path: moot verify RECEIPT RECORD.")
    _, target, _ = detect(target)
    if record_digest(target) != fields.get("sha256"):
        return Verdict(False, f"{target} was edited after the receipt was issued: {_what_differs(target, fields)}.")
    return Verdict(True, f"{target} matches {receipt_file}, signed by key {signer} ({origin}).", vouched(receipt))


def _signer(receipt_file: Path, receipt: dict[str, Any], signature: dict[str, Any]) -> bytes | Verdict:
    """The raw public key that signed ``receipt``, or the verdict that says why no key did: another algorithm
    than Ed25519, a signature that does not match, or a ``key_id`` that is not the signing key's.

    The ``signature`` object itself is not signed, so each of its fields is checked against the others."""
    algorithm = signature.get("algorithm")
    if algorithm != ALGORITHM:
        shown = repr(algorithm) if len(repr(algorithm)) <= 40 else repr(algorithm)[:39] + "…"
        return Verdict(
            False,
            f"{receipt_file} says it is signed with {shown}; moot accepts only {ALGORITHM} receipts, so ask its "
            "issuer for one made by moot receipt.",
        )
    _, ed25519 = _crypto()
    from cryptography.exceptions import InvalidSignature

    try:
        raw_public = base64.b64decode(str(signature.get("public_key")), validate=True)
        value = base64.b64decode(str(signature.get("value")), validate=True)
        ed25519.Ed25519PublicKey.from_public_bytes(raw_public).verify(value, canonical(receipt))
    except (ValueError, InvalidSignature):
        return Verdict(
            False, f"{receipt_file} was edited after it was signed: its signature does not match its contents."
        )
    if signature.get("key_id") != key_id(raw_public):
        return Verdict(
            False,
            f"{receipt_file} names key_id {str(signature.get('key_id'))[:40]!r}, but key {key_id(raw_public)} "
            "signed it: the receipt was edited, so ask its issuer for the original.",
        )
    return raw_public


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name no file system can hold (a NUL byte, too long)
        return False


def _what_differs(target: Path, fields: dict[str, Any]) -> str:
    """Name the turns that changed, when the record's turns can still be told apart."""
    signed = [str(d) for d in fields.get("turn_digests") or []]
    report = check_path(target)
    edited = [v.turn for v in report.violations if v.rule in {"PRIOR_TURN_MODIFIED", "PRIOR_TURN_REMOVED"}]
    if edited:
        return "turn(s) " + ", ".join(str(n) for n in edited) + " no longer match what was signed"
    current = _turn_digests(target)
    changed = [str(n) for n, (a, b) in enumerate(zip(signed, current, strict=False), start=1) if a != b]
    if changed:
        return "turn(s) " + ", ".join(changed) + " differ from what was signed"
    if len(current) != len(signed):
        return f"it has {len(current)} accepted turn(s), the receipt {len(signed)}"
    return "its digest differs from the receipt's, outside the signed turns (a header or a file was changed)"
