"""Every page the server serves works without internet access: the scripts, styles and
icons it refers to come from this server, never from a CDN or another host."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import PurePosixPath
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ui.shell import PAGES

#: The host TestClient's requests are addressed to: this server.
OWN_HOST = "testserver"
DOCS_PAGES = ("/docs", "/redoc", "/docs/oauth2-redirect")


class _References(HTMLParser):
    """Collects the ``src`` and ``href`` attributes of every tag, with the tag."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [(tag, value) for name, value in attrs
                       if name in ("src", "href") and value is not None]


def references(page: str) -> list[tuple[str, str]]:
    parser = _References()
    parser.feed(page)
    return parser.found


def html_page(client: TestClient, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, (path, response.text[:300])
    assert response.headers["content-type"].startswith("text/html"), path
    return response.text


def off_server(url: str) -> bool:
    """Whether ``url`` points at another host (absolute or scheme-relative)."""
    host = urlsplit(url.strip()).netloc
    return bool(host) and host != OWN_HOST


#: The content type each kind of file the docs refer to must be served with.
CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


@pytest.mark.parametrize(("path", "kinds"), [("/docs", {".js", ".css", ".png"}),
                                             ("/redoc", {".js", ".png"})])
def test_docs_load_their_scripts_and_styles_from_this_server(client, path, kinds) -> None:
    page = html_page(client, path)
    assert "/openapi.json" in page
    urls = [url for _, url in references(page)]
    assert {PurePosixPath(url).suffix for url in urls} == kinds, urls
    for url in urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc and url.startswith("/"), url
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["content-type"].startswith(
            CONTENT_TYPES[PurePosixPath(url).suffix]), (url, response.headers)
        assert len(response.content) > 1000, url


def test_the_docs_read_this_servers_schema(client) -> None:
    schema = client.get("/openapi.json").json()
    # Swagger UI 5 reads OpenAPI 3.1 (version 4, shipped by some packages, shows nothing)
    assert schema["openapi"].startswith("3.1")
    [script] = [url for tag, url in references(html_page(client, "/docs")) if tag == "script"]
    assert "isOAS31" in client.get(script).text


def test_no_page_refers_to_another_host(client) -> None:
    paths = [*PAGES, "/no-such-page", *DOCS_PAGES]
    for path in paths:
        found = references(html_page(client, path))
        assert not [url for _, url in found if off_server(url)], path
        if path in PAGES:
            assert found, path  # a Dash page: its scripts are listed


def test_the_sign_in_page_refers_to_no_other_host(settings_factory) -> None:
    with TestClient(create_app(settings_factory(api_token="s3cret"))) as client:
        found = references(html_page(client, "/sign-in"))
        assert not [url for _, url in found if off_server(url)]


def test_other_hosts_are_told_apart_from_this_one() -> None:
    assert off_server("https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css")
    assert off_server("//fonts.googleapis.com/css") and off_server("http://example.org/")
    assert not off_server("/docs/assets/swagger-ui.css") and not off_server("style.css")
    assert not off_server("http://testserver/assets/style.css") and not off_server("#top")
