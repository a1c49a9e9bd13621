"""Replay one ``@octokit/fixtures`` scenario on ``127.0.0.1:0``: recorded responses in
recorded order, with ``https://api.github.com`` rewritten to the server's own URL (so
PyGithub's host check passes) and queries compared parsed (PyGithub orders them
differently from octokit). A request that does not match the next recorded one is
answered 599 and recorded in ``mismatches``. ``/rate_limit`` (which the forge reads
once, for free) is answered without consuming a recording."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

SCENARIOS = Path(__file__).resolve().parent / "octokit-fixtures"


class Replay:
    def __init__(self, scenario: str) -> None:
        self.entries: list[dict[str, Any]] = json.loads(
            (SCENARIOS / f"{scenario}.json").read_text())
        self.position = 0
        self.mismatches: list[str] = []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                replay.answer(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        got = urlsplit(handler.path)
        if got.path == "/rate_limit":
            core = {"limit": 5000, "used": 0, "remaining": 5000, "reset": 4102444800}
            self._send(handler, 200, {}, {"resources": {"core": core}, "rate": core})
            return
        entry = self.entries[self.position] if self.position < len(self.entries) else None
        if entry is None:
            self.mismatches.append(f"unexpected {handler.command} {handler.path}")
            self._send(handler, 599, {}, {"message": "no more recorded requests"})
            return
        want = urlsplit(entry["path"])
        if (handler.command.lower() != entry["method"] or got.path != want.path
                or parse_qs(got.query) != parse_qs(want.query)):
            self.mismatches.append(f"{handler.command} {handler.path} != "
                                   f"{entry['method'].upper()} {entry['path']}")
            self._send(handler, 599, {}, {"message": "request does not match the recording"})
            return
        self.position += 1
        headers = {k: v for k, v in entry["headers"].items()
                   if k.lower() not in ("content-length", "transfer-encoding", "connection")}
        self._send(handler, int(entry["status"]), headers, entry["response"])

    def _send(self, handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str],
              body: Any) -> None:
        data = json.dumps(body).replace("https://api.github.com", self.base_url).encode()
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, str(value).replace("https://api.github.com", self.base_url))
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
