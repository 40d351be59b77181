"""Constants and small servers shared by the participant tests (a plain module, not collected)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from moot.agents.llama_server import free_port as free_port  # re-exported for the tests

# A turn-shaped schema of the kind the protocols hand to agents. maxLength keeps a 135M model
# from rambling past max_tokens.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["agree", "disagree"]},
        "reason": {"type": "string", "maxLength": 80},
    },
    "required": ["verdict", "reason"],
}


def chat_completion(content: str, model: str = "scripted-model") -> dict[str, Any]:
    """A chat completion exactly as OpenAI's API documents it."""
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }


@dataclass(frozen=True)
class Seen:
    """One request the scripted server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@contextmanager
def scripted_http_server(
    answers: list[tuple[int, dict[str, Any], dict[str, str]]],
) -> Iterator[tuple[str, list[Seen]]]:
    """A real HTTP server on 127.0.0.1 answering POSTs from a script of (status, body, headers).

    The last answer repeats once the script runs out. Yields the /v1 base URL and the requests
    it received.
    """
    received: list[Seen] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            received.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status, body, headers = answers[min(len(received), len(answers)) - 1]
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
