"""Limits and authentication on real sockets: refused before or while the body streams.

The test client hands the app a body it has already built, so these talk raw HTTP/1.1 to
``calibdash serve``: a chunked upload must be cut off near its limit (not spooled in full,
3 GiB under a 1 MiB limit before), a wrong token and an announced oversized body must be
answered before a byte of the body is sent.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import LiveServer, live_server

UPLOAD_LIMIT = 1 << 20
REQUEST_LIMIT = 1 << 16
TOKEN = "s3cret-for-sockets"
_CHUNK = b"1,2\n" * (1 << 14)  # 64 KiB


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("limits") / "store"
    with live_server(data_dir, env={"CALIBDASH_MAX_UPLOAD_BYTES": str(UPLOAD_LIMIT),
                                    "CALIBDASH_MAX_REQUEST_BYTES": str(REQUEST_LIMIT),
                                    "CALIBDASH_API_TOKEN": TOKEN}) as live:
        yield live


def _request_head(live: LiveServer, path: str, headers: dict[str, str]) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", live.port), timeout=10)
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{live.port}",
             *(f"{k}: {v}" for k, v in headers.items())]
    connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return connection


def _status(connection: socket.socket, wait: float) -> int:
    readable, _, _ = select.select([connection], [], [], wait)
    assert readable, f"no response within {wait} s"
    head = connection.recv(65536).split(b"\r\n", 1)[0]
    return int(head.split()[1])


def _stream_until_answered(connection: socket.socket) -> int:
    """Send 64 KiB chunks (up to 64 MiB) until the server answers or stops reading."""
    sent = 0
    connection.settimeout(5)
    while sent < 64 << 20:
        if select.select([connection], [], [], 0)[0]:
            break
        try:
            connection.sendall(b"%x\r\n%s\r\n" % (len(_CHUNK), _CHUNK))
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            break
        sent += len(_CHUNK)
    return sent


@pytest.mark.parametrize(("path", "content_type", "limit"), [
    ("/api/v1/uploads", "multipart/form-data; boundary=b", UPLOAD_LIMIT),
    ("/api/v1/datasets", "multipart/form-data; boundary=b", UPLOAD_LIMIT),
    ("/_dash-update-component", "application/json", REQUEST_LIMIT),
])
@pytest.mark.slow
def test_a_chunked_body_is_cut_off_near_its_limit(server, path, content_type, limit) -> None:
    with _request_head(server, path, {"Transfer-Encoding": "chunked",
                                      "Content-Type": content_type,
                                      "Authorization": f"Bearer {TOKEN}"}) as connection:
        opening = (b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\n'
                   b"y_true,y_prob\n")
        connection.sendall(b"%x\r\n%s\r\n" % (len(opening), opening))
        sent = _stream_until_answered(connection)
        assert _status(connection, 10) == 413
    # stopped near the limit, not after the whole body (socket buffers hold a few MiB)
    assert sent < limit + (8 << 20), sent
    incoming = Path(server.data_dir, "incoming")
    assert not incoming.exists() or not any(incoming.iterdir())


@pytest.mark.parametrize(("headers", "status"), [
    ({"Authorization": "Bearer wrong", "Content-Length": str(1 << 30)}, 401),
    ({"Content-Length": str(1 << 30)}, 401),  # no token at all
    ({"Authorization": f"Bearer {TOKEN}", "Content-Length": str(300 << 20)}, 413),
])
def test_refused_before_the_body_is_sent(server, headers, status) -> None:
    for path in ("/api/v1/uploads", "/_dash-update-component"):
        with _request_head(server, path, {"Content-Type": "application/json",
                                          **headers}) as connection:
            start = time.monotonic()
            assert _status(connection, 5) == status, path
            assert time.monotonic() - start < 2


def test_the_server_answers_health_after_the_attacks(server) -> None:
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/api/v1/health", timeout=5) as response:
        assert response.status == 200
