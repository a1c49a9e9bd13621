"""Scripted model servers on loopback for the real agent CLIs.

Each server plays a script of turns, one per model request, and records every
request (path, headers, JSON body). A turn is a shell command for the CLI's shell
tool (``Shell``), a final answer (``Text``), or an API refusal (``Fail``). The tool is
picked by name from the request's ``tools`` so a CLI upgrade that adds tools does not
break the fake. Requests that offer no shell tool (side requests a CLI may make, such
as a title) get a short text answer without consuming a turn.

``AnthropicModel`` speaks the Messages API as server-sent events built from the
``anthropic`` SDK's own event types; ``OpenAIModel`` speaks the Responses API with the
minimal event shapes Codex needs (the ``openai`` SDK types are stricter than Codex).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic.types import (
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    TextBlock,
    TextDelta,
    ToolUseBlock,
    Usage,
)
from anthropic.types.input_json_delta import InputJSONDelta
from anthropic.types.raw_message_delta_event import Delta


@dataclass(frozen=True)
class Shell:
    """Ask the CLI to run ``command`` through its shell tool."""

    command: str


@dataclass(frozen=True)
class Text:
    """Answer with ``text`` and end the turn."""

    text: str


@dataclass(frozen=True)
class Fail:
    """Answer with HTTP ``status`` and an API error body of ``error_type``."""

    status: int
    error_type: str
    message: str = "refused by the scripted model"


Turn = Shell | Text | Fail
_OVERLOADED = b'{"type": "error", "error": {"type": "overloaded_error", "message": "down"}}'


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ScriptedModel:
    """The shared part: the script, the request log and the HTTP server thread."""

    turns: list[Turn]
    requests: list[Recorded] = field(default_factory=list)
    played: int = 0
    input_tokens: int = 1000
    output_tokens: int = 50
    down: bool = False
    """Play an outage: every request (the list-models probe too) gets 529 overloaded."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                model._record(self, {})
                if model.down:
                    self._send(529, "application/json", _OVERLOADED)
                    return
                self._send(404, "application/json", b'{"error": "not here"}')

            def do_HEAD(self) -> None:
                self._send(200, "text/plain", b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                model._record(self, body)
                status, ctype, payload = (529, "application/json", _OVERLOADED) \
                    if model.down else model.answer(self.path, body)
                self._send(status, ctype, payload)

            def _send(self, status: int, ctype: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(handler.path, dict(handler.headers.items()), body))

    def next_turn(self) -> Turn:
        with self._lock:
            if self.played >= len(self.turns):
                return Text("(the scripted model has nothing more to say)")
            turn = self.turns[self.played]
            self.played += 1
            return turn

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        raise NotImplementedError

    def texts_sent(self) -> str:
        """Everything the CLI sent, as one string (to look for leaked secrets)."""
        return "\n".join(json.dumps(r.body) + json.dumps(r.headers) for r in self.requests)


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                   for name, data in events).encode("utf-8")


class AnthropicModel(ScriptedModel):
    """``POST /v1/messages`` with ``stream: true``: answers a turn as SSE events."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if not path.startswith("/v1/messages") or "count_tokens" in path:
            return 200, "application/json", b'{"input_tokens": 10}'
        tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        if "Bash" not in tools:
            return self._stream(body, Text("side answer"))
        return self._stream(body, self.next_turn())

    def _stream(self, body: dict[str, Any], turn: Turn) -> tuple[int, str, bytes]:
        if isinstance(turn, Fail):
            error = {"type": "error", "error": {"type": turn.error_type, "message": turn.message}}
            return turn.status, "application/json", json.dumps(error).encode()
        model = str(body.get("model") or "claude-fake")
        index = len(self.requests)
        start = RawMessageStartEvent(type="message_start", message=Message(
            id=f"msg_{index}", type="message", role="assistant", model=model, content=[],
            stop_reason=None, stop_sequence=None,
            usage=Usage(input_tokens=self.input_tokens, output_tokens=1)))
        if isinstance(turn, Shell):
            block: ToolUseBlock | TextBlock = ToolUseBlock(
                type="tool_use", id=f"toolu_{index:04d}", name="Bash", input={})
            delta: InputJSONDelta | TextDelta = InputJSONDelta(
                type="input_json_delta", partial_json=json.dumps(
                    {"command": turn.command, "description": "scripted step"}))
            stop = "tool_use"
        else:
            block = TextBlock(type="text", text="")
            delta = TextDelta(type="text_delta", text=turn.text)
            stop = "end_turn"
        events = [
            start,
            RawContentBlockStartEvent(type="content_block_start", index=0, content_block=block),
            RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=delta),
            RawContentBlockStopEvent(type="content_block_stop", index=0),
            RawMessageDeltaEvent(type="message_delta",
                                 delta=Delta(stop_reason=stop, stop_sequence=None),  # type: ignore[arg-type]
                                 usage=MessageDeltaUsage(output_tokens=self.output_tokens)),
            RawMessageStopEvent(type="message_stop"),
        ]
        payload = _sse([(e.type, e.model_dump(mode="json", exclude_none=True)) for e in events])
        return 200, "text/event-stream", payload

    def tool_results(self) -> list[str]:
        """The text of every tool result the CLI sent back, in order, de-duplicated."""
        seen: list[str] = []
        for request in self.requests:
            for message in request.body.get("messages") or []:
                content = message.get("content")
                if not isinstance(content, list):
                    continue
                for part in content:
                    if isinstance(part, dict) and part.get("type") == "tool_result":
                        text = json.dumps(part.get("content"))
                        if text not in seen:
                            seen.append(text)
        return seen


class OpenAIModel(ScriptedModel):
    """``POST /v1/responses`` with ``stream: true``: answers a turn as SSE events."""

    SHELL_TOOLS = ("exec_command", "shell_command", "shell")

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if not path.startswith("/v1/responses"):
            return 404, "application/json", b'{"error": {"message": "not here"}}'
        names = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        shell = next((n for n in self.SHELL_TOOLS if n in names), None)
        turn = self.next_turn() if shell else Text("side answer")
        index = len(self.requests)
        if isinstance(turn, Fail):
            error = {"error": {"type": turn.error_type, "code": turn.error_type,
                               "message": turn.message}}
            return turn.status, "application/json", json.dumps(error).encode()
        if isinstance(turn, Shell):
            args = {"cmd": turn.command} if shell == "exec_command" else {
                "command": ["bash", "-lc", turn.command]}
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_{index}",
                                    "call_id": f"call_{index}", "name": shell,
                                    "arguments": json.dumps(args)}
        else:
            item = {"type": "message", "role": "assistant", "id": f"msg_{index}",
                    "content": [{"type": "output_text", "text": turn.text}]}
        usage = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                 "total_tokens": self.input_tokens + self.output_tokens}
        payload = _sse([
            ("response.created", {"type": "response.created",
                                  "response": {"id": f"resp_{index}"}}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": f"resp_{index}", "usage": usage}}),
        ])
        return 200, "text/event-stream", payload

    def tool_results(self) -> list[str]:
        seen: list[str] = []
        for request in self.requests:
            for item in request.body.get("input") or []:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    text = json.dumps(item.get("output"))
                    if text not in seen:
                        seen.append(text)
        return seen
