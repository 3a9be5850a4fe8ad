"""The gate every request passes before any route sees it (a pure ASGI middleware).

In order, before one byte of the body is read:

1. the ``Host`` header must be an allowed host (DNS rebinding);
2. a state-changing request (POST, PUT, PATCH, DELETE) must come from this
   server's own origin when the browser says where it comes from (CSRF);
3. when ``CALIBDASH_API_TOKEN`` is set, every path but ``/api/v1/health`` and the
   sign-in page needs ``Authorization: Bearer <token>`` or the signed session
   cookie the sign-in page sets (``HttpOnly``, ``SameSite=Strict``);
4. the body is counted while it streams: uploads may carry
   ``CALIBDASH_MAX_UPLOAD_BYTES``, every other request ``CALIBDASH_MAX_REQUEST_BYTES``;
   past that the request ends with a 413, whatever the route was doing.

Following OWASP's CSRF guidance (verify the origin with standard headers, plus
``SameSite`` cookies) and its file-upload guidance (authenticate before accepting
a file, limit its size while receiving it).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import re
import time
from urllib.parse import parse_qs, quote, urlsplit

from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.docs import DOCS_ASSETS_URL, DOCS_URL, OAUTH2_REDIRECT_URL, REDOC_URL
from app.api.errors import error_response
from app.config import Settings

SESSION_COOKIE = "calibdash_session"
SIGN_IN_PATH = "/sign-in"
SIGN_OUT_PATH = "/sign-out"
#: Paths answered without the token, whatever CALIBDASH_API_TOKEN says.
PUBLIC_PATHS = frozenset({"/api/v1/health", SIGN_IN_PATH})
_DOCS_PATHS = frozenset({DOCS_URL, OAUTH2_REDIRECT_URL, REDOC_URL, "/openapi.json"})
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Routes that take a file: the only bodies allowed to reach the upload limit.
_UPLOAD_ROUTES = re.compile(r"^/api/v1/(datasets|uploads|(recalibrations|models)/[^/]+/apply)$")
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_SIGN_IN_BODY_BYTES = 4096
_FAILED_SIGN_IN_DELAY = 1.0  # seconds; slows guessing without a lock-out to abuse


class _BodyTooLarge(Exception):
    """Raised from ``receive`` when a body passes its limit."""


def allowed_hosts(settings: Settings) -> frozenset[str] | None:
    """The host names the ``Host`` header may carry; ``None`` allows any."""
    names = {name.strip().lower() for name in settings.allowed_hosts.split(",") if name.strip()}
    if "*" in names:
        return None
    if names:
        return frozenset(names)
    bound = settings.host.strip("[]").lower()
    if bound in _LOOPBACK_HOSTS or bound.startswith("127."):
        return _LOOPBACK_HOSTS | {bound}
    return None


def _host_name(host: str) -> str:
    """``example.org:8050`` -> ``example.org``; ``[::1]:8050`` -> ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class SessionSigner:
    """Signed, expiring session values derived from the API token.

    A value is ``<expiry>.<hmac>``; changing the token invalidates every session.
    """

    def __init__(self, token: str, lifetime_seconds: float) -> None:
        self._key = hashlib.sha256(b"calibdash-session\x00" + token.encode()).digest()
        self.lifetime = int(lifetime_seconds)

    def _mac(self, expiry: str) -> str:
        return hmac.new(self._key, expiry.encode(), hashlib.sha256).hexdigest()

    def issue(self) -> str:
        expiry = str(int(time.time()) + self.lifetime)
        return f"{expiry}.{self._mac(expiry)}"

    def valid(self, value: str) -> bool:
        expiry, _, mac = value.partition(".")
        if not expiry.isdigit() or not hmac.compare_digest(mac, self._mac(expiry)):
            return False
        return int(expiry) > time.time()


class SecurityMiddleware:
    """Host, origin, token and body-size checks in front of the whole application."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.token = settings.api_token or None
        self.signer = SessionSigner(self.token, settings.session_hours * 3600) \
            if self.token else None
        self.public_docs = settings.public_docs
        self.hosts = allowed_hosts(settings)
        self.upload_limit = settings.max_upload_bytes + (1 << 20)  # multipart overhead
        self.request_limit = settings.max_request_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await refusal(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        if scope["path"] in (SIGN_IN_PATH, SIGN_OUT_PATH):
            await self._sign_in_page(scope, receive, send, headers)
            return
        await self._limited(scope, receive, send, headers)

    # -- checks before the body ------------------------------------------------------
    def _refusal(self, scope: Scope, headers: dict[str, str]) -> Response | None:
        host = headers.get("host", "")
        if self.hosts is not None and _host_name(host) not in self.hosts:
            return error_response(
                400, "host_not_allowed",
                f"this server does not answer to the host {host[:100]!r}; add it to "
                "CALIBDASH_ALLOWED_HOSTS (comma-separated, or * for any).")
        method = scope.get("method", "GET")
        if (method in _UNSAFE_METHODS or scope["type"] == "websocket") \
                and not _same_origin(headers, host):
            return error_response(
                403, "cross_origin",
                "this request comes from another site (its Origin or Referer is not this "
                "server's); calibdash only accepts changes from its own pages.")
        if self.token is None or self._public(scope["path"]) or self._authenticated(headers):
            return None
        if method == "GET" and "text/html" in headers.get("accept", ""):
            target = scope["path"] + (f"?{scope['query_string'].decode('latin-1')}"
                                      if scope.get("query_string") else "")
            return RedirectResponse(f"{SIGN_IN_PATH}?next={quote(target, safe='')}", 303)
        return error_response(
            401, "unauthorized",
            "this server needs its API token: send 'Authorization: Bearer <token>', or sign "
            f"in at {SIGN_IN_PATH} in a browser.")

    def _public(self, path: str) -> bool:
        return path in PUBLIC_PATHS or path == SIGN_OUT_PATH \
            or (self.public_docs and _docs_path(path))

    def _authenticated(self, headers: dict[str, str]) -> bool:
        if self.token is None or self.signer is None:
            return True
        header = headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            return hmac.compare_digest(header[7:].strip().encode(), self.token.encode())
        session = _cookies(headers).get(SESSION_COOKIE)
        return session is not None and self.signer.valid(session)

    # -- the body --------------------------------------------------------------------
    async def _limited(self, scope: Scope, receive: Receive, send: Send,
                       headers: dict[str, str]) -> None:
        limit = self.upload_limit if _UPLOAD_ROUTES.match(scope["path"]) \
            and scope["method"] == "POST" else self.request_limit
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(limit, upload=limit == self.upload_limit)(scope, receive, send)
            return
        state = {"received": 0, "exceeded": False, "started": False}

        async def counted_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                state["received"] += len(message.get("body", b""))
                if state["received"] > limit:
                    state["exceeded"] = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            if state["exceeded"]:
                if message["type"] == "http.response.start" and not state["started"]:
                    state["started"] = True
                    await _too_large(limit, upload=limit == self.upload_limit)(
                        scope, _empty_receive, send)
                return
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except _BodyTooLarge:
            pass
        except Exception:
            if not state["exceeded"]:
                raise
        if state["exceeded"] and not state["started"]:
            state["started"] = True
            await _too_large(limit, upload=limit == self.upload_limit)(
                scope, _empty_receive, send)

    # -- sign-in ---------------------------------------------------------------------
    async def _sign_in_page(self, scope: Scope, receive: Receive, send: Send,
                            headers: dict[str, str]) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        target = _safe_target(query.get("next", ["/"])[0])
        if scope["path"] == SIGN_OUT_PATH or self.signer is None:
            response: Response = RedirectResponse(SIGN_IN_PATH if self.signer else "/", 303)
            response.delete_cookie(SESSION_COOKIE, path="/")
        elif scope["method"] == "POST":
            form = await _small_form(receive)
            target = _safe_target(form.get("next", target))
            if form.get("token") is not None and hmac.compare_digest(
                    form["token"].encode(), (self.token or "").encode()):
                response = RedirectResponse(target, 303)
                response.set_cookie(SESSION_COOKIE, self.signer.issue(),
                                    max_age=self.signer.lifetime, path="/", httponly=True,
                                    samesite="strict", secure=scope.get("scheme") == "https")
            else:
                await asyncio.sleep(_FAILED_SIGN_IN_DELAY)
                response = _sign_in_html(target, "That is not this server's token.", 401)
        else:
            response = _sign_in_html(target, None, 200)
        response.headers["cache-control"] = "no-store"
        await response(scope, receive, send)


def _docs_path(path: str) -> bool:
    """A path of the API's documentation: its pages, the schema, and their scripts."""
    return path in _DOCS_PATHS or path.startswith(DOCS_ASSETS_URL + "/")


def _headers(scope: Scope) -> dict[str, str]:
    return {key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope.get("headers", [])}


def _cookies(headers: dict[str, str]) -> dict[str, str]:
    pairs = (part.strip().partition("=") for part in headers.get("cookie", "").split(";"))
    return {name: value for name, _, value in pairs if name}


def _same_origin(headers: dict[str, str], host: str) -> bool:
    """False when the browser says the request comes from another origin.

    Non-browser clients (curl, scripts) send neither ``Origin`` nor ``Referer``; they
    are not the CSRF threat and pass (the token, when set, still applies).
    """
    if headers.get("sec-fetch-site") == "cross-site":
        return False
    source = headers.get("origin") or headers.get("referer")
    if source is None:
        return True
    if source == "null":
        return False
    return urlsplit(source).netloc.lower() == host.strip().lower()


def _safe_target(target: str) -> str:
    """Only local paths: ``/overview?x`` yes; ``//evil.example`` or ``http://...`` no."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


async def _small_form(receive: Receive) -> dict[str, str]:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > _SIGN_IN_BODY_BYTES or not message.get("more_body"):
            break
    fields = parse_qs(body[:_SIGN_IN_BODY_BYTES].decode("utf-8", errors="replace"))
    return {name: values[0] for name, values in fields.items()}


async def _empty_receive() -> Message:
    return {"type": "http.disconnect"}


def _too_large(limit: int, *, upload: bool) -> Response:
    setting = "CALIBDASH_MAX_UPLOAD_BYTES" if upload else "CALIBDASH_MAX_REQUEST_BYTES"
    return error_response(413, "too_large",
                          f"the request body is larger than this server accepts "
                          f"({limit:,} bytes, {setting}).")


def _sign_in_html(target: str, problem: str | None, status: int) -> HTMLResponse:
    alert = f'<p class="problem" role="alert">{html.escape(problem)}</p>' if problem else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · calibdash</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, sans-serif; background: #f5f6f8; color: #1d2433; margin: 0; }}
main {{ max-width: 22rem; margin: 12vh auto; background: #fff; padding: 2rem;
        border-radius: 8px; box-shadow: 0 1px 4px rgba(0,0,0,.12); }}
h1 {{ font-size: 1.4rem; margin: 0 0 .4rem; }} .brand {{ color: #2f6fdf; }}
label {{ display: block; margin: 1rem 0 .3rem; font-weight: 600; }}
input[type=password] {{ width: 100%; box-sizing: border-box; padding: .55rem;
        border: 1px solid #b8bfcc; border-radius: 4px; font-size: 1rem; }}
button {{ margin-top: 1rem; width: 100%; padding: .6rem; border: 0; border-radius: 4px;
        background: #2f6fdf; color: #fff; font-size: 1rem; cursor: pointer; }}
.problem {{ color: #b3261e; }} .hint {{ color: #5b6475; font-size: .85rem; }}
</style></head>
<body><main>
<h1>Sign in to <span class="brand">calibdash</span></h1>
<p class="hint">This server is protected by an access token (CALIBDASH_API_TOKEN).
Ask the person who runs it.</p>
{alert}
<form method="post" action="{SIGN_IN_PATH}">
<input type="hidden" name="next" value="{html.escape(target)}">
<label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required
 autofocus>
<button type="submit">Sign in</button>
</form></main></body></html>"""
    return HTMLResponse(page, status_code=status)

