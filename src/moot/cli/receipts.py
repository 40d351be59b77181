"""``moot receipt RECORD`` and ``moot verify RECEIPT [RECORD]``: signed decision receipts.

``moot verify`` exits 0 when the receipt and the record match and a trusted key signed it (the user's own
key or one in their trust list, else only the keys given with ``--trust``), 1 when either was edited or
another key signed it, 2 for usage errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from moot.core.files import atomic_write_text


def receipt_command(
    record: Annotated[Path, typer.Argument(help="A record file, or a roundtable meeting directory.")],
    key: Annotated[
        Path | None,
        typer.Option("--key", help="The Ed25519 private key (PEM) to sign with (default: made on first use)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Where to write it (default: RECORD.receipt.json).")
    ] = None,
) -> None:
    """Write a signed receipt for a record: its digest, outcome, participants, tokens and times."""
    from moot.receipts import build_receipt, load_or_create_key, receipt_path

    receipt = build_receipt(record, load_or_create_key(key))
    target = out or receipt_path(record)
    atomic_write_text(target, json.dumps(receipt, indent=2, ensure_ascii=False) + "\n")
    typer.echo(f"{target} (key {receipt['signature']['key_id']})")


def verify_command(
    receipt: Annotated[Path, typer.Argument(help="The receipt (.receipt.json).")],
    record: Annotated[
        Path | None, typer.Argument(help="The record it vouches for (default: the one named beside the receipt).")
    ] = None,
    trust: Annotated[
        list[Path] | None,
        typer.Option(
            "--trust",
            help="A public key (PEM) the receipt may be signed by; repeatable. Given, only these keys are trusted "
            "(default: your own key and the keys in ~/.config/moot/trusted-receipt-keys/).",
        ),
    ] = None,
) -> None:
    """Check a receipt offline: its signature, that a key you trust made it, and that the record is unchanged."""
    from moot.receipts import Trust, verify

    verdict = verify(receipt, record, Trust.given(trust) if trust else None)
    typer.echo(verdict.message, err=not verdict.ok)
    for line in verdict.details:
        typer.echo(f"  {line}")
    raise typer.Exit(0 if verdict.ok else 1)
