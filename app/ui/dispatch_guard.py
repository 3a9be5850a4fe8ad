"""Malformed Dash callback requests answered with a 400, not Dash's bare 500.

Dash's dispatcher trusts its body: a body that is not JSON, lacks ``output`` or
``inputs``, or names an output no callback has raises inside Dash, which answers 500.
This pure ASGI middleware reads the body of ``POST .../_dash-update-component`` (already
bounded by :class:`app.security.SecurityMiddleware`), checks that shape and that the
output is one of the app's callbacks, and passes the same bytes on, or answers 400 with
what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DISPATCH_PATH = "/_dash-update-component"


class DispatchGuard:
    """Checks Dash callback requests before Dash reads them.

    Parameters
    ----------
    app : ASGI application
    outputs : callable
        Gives the app's callback outputs (Dash's ``callback_map`` keys), read at request
        time since pages register their callbacks after the middleware is built.
    """

    def __init__(self, app: ASGIApp, outputs: Callable[[], Container[str]]) -> None:
        self.app = app
        self.outputs = outputs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not str(
                scope["path"]).endswith(DISPATCH_PATH):
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        problem = self._problem(body)
        if problem is not None:
            await _bad_request(send, problem)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _problem(self, body: bytes) -> str | None:
        try:
            request: Any = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return "the callback request is not JSON."
        if not isinstance(request, dict):
            return "the callback request must be a JSON object."
        output = request.get("output")
        if not isinstance(output, str) or not isinstance(request.get("inputs", []), list):
            return "the callback request needs an 'output' (text) and 'inputs' (a list)."
        for key in ("state", "changedPropIds"):
            if not isinstance(request.get(key, []), list):
                return f"the callback request's {key!r} must be a list."
        if output not in self.outputs():
            return f"no callback updates {output[:200]!r}; reload the page."
        return None


async def _bad_request(send: Send, message: str) -> None:
    body = json.dumps({"error": {"code": "invalid_callback", "message": message,
                                 "details": {}}}).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


__all__ = ["DispatchGuard"]
