"""The gate in front of everything: token, sign-in session, origin, host and body limits.

The attacks come from a security review of the app: a Dash callback that listed
every dataset without the token, uploads accepted from another site's page, and a
body read in full before its size was checked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.cookies import SimpleCookie

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.security import SESSION_COOKIE, SessionSigner, allowed_hosts
from tests.app.test_api import assert_error

TOKEN = "correct-horse-battery-staple"
SMALL_CSV = b"y_true,y_prob,x\n0,0.2,1\n1,0.7,2\n0,0.4,3\n1,0.9,4\n"

#: The dataset picker's callback: it lists every dataset (the leak that review found).
PICKER_CALLBACK = {
    "output": "..dataset-picker.options...dataset-picker.value..",
    "outputs": [{"id": "dataset-picker", "property": "options"},
                {"id": "dataset-picker", "property": "value"}],
    "inputs": [{"id": "url", "property": "href", "value": "http://testserver/"}],
    "state": [{"id": "dataset-store", "property": "data", "value": None}],
    "changedPropIds": ["url.href"],
}


@pytest.fixture
def guarded(settings_factory) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    app = create_app(settings_factory(api_token=TOKEN))
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as client:
        yield client


def _bearer() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def _upload(client: TestClient, **kwargs) -> object:  # type: ignore[no-untyped-def]
    return client.post("/api/v1/datasets", files={"file": ("p.csv", SMALL_CSV)}, **kwargs)


# -- the token covers every route ---------------------------------------------------------
@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/api/v1/datasets"),
    ("GET", "/_dash-layout"),
    ("GET", "/_dash-dependencies"),
    ("POST", "/_dash-update-component"),
    ("GET", "/assets/upload.js"),
    ("GET", "/overview"),
    ("GET", "/docs"),
    ("GET", "/docs/assets/swagger-ui-bundle.js"),
    ("GET", "/redoc"),
    ("GET", "/openapi.json"),
    ("POST", "/api/v1/uploads"),
    ("GET", "/api/v1/recalibrations/rc_x/download"),
])
def test_every_route_but_health_needs_the_token(guarded, method, path) -> None:
    response = guarded.request(method, path, json=PICKER_CALLBACK if method == "POST" else None)
    error = assert_error(response, 401, "unauthorized")
    assert "Bearer" in error["message"] and "/sign-in" in error["message"]


def test_health_stays_public_for_the_docker_healthcheck(guarded) -> None:
    assert guarded.get("/api/v1/health").json()["status"] == "ok"


def test_a_dash_callback_without_the_token_reveals_nothing(guarded) -> None:
    assert _upload(guarded, headers=_bearer()).status_code == 201
    leaked = guarded.post("/_dash-update-component", json=PICKER_CALLBACK)
    assert leaked.status_code == 401 and "ds_" not in leaked.text
    allowed = guarded.post("/_dash-update-component", json=PICKER_CALLBACK, headers=_bearer())
    assert allowed.status_code == 200 and "ds_" in allowed.text


def test_a_browser_is_sent_to_the_sign_in_page_and_back(guarded) -> None:
    page = guarded.get("/overview?dataset=ds_1", headers={"Accept": "text/html"})
    assert page.status_code == 303
    assert page.headers["location"] == "/sign-in?next=%2Foverview%3Fdataset%3Dds_1"
    form = guarded.get(page.headers["location"])
    assert form.status_code == 200 and 'name="token"' in form.text
    assert 'value="/overview?dataset=ds_1"' in form.text


def test_sign_in_sets_an_httponly_strict_cookie_that_opens_everything(guarded) -> None:
    signed = guarded.post("/sign-in", data={"token": TOKEN, "next": "/recalibrate"})
    assert signed.status_code == 303 and signed.headers["location"] == "/recalibrate"
    cookie = SimpleCookie(signed.headers["set-cookie"])[SESSION_COOKIE]
    assert cookie["httponly"] is True and cookie["samesite"].lower() == "strict"
    assert cookie["path"] == "/" and int(cookie["max-age"]) == 12 * 3600
    assert TOKEN not in cookie.value  # a signature, not the token itself
    # the test client keeps the cookie: the UI, its scripts' uploads and downloads work
    assert guarded.get("/_dash-layout").status_code == 200
    assert guarded.get("/assets/upload.js").status_code == 200
    created = _upload(guarded)
    assert created.status_code == 201, created.text
    assert guarded.post("/_dash-update-component", json=PICKER_CALLBACK).status_code == 200
    # signing out forgets it
    out = guarded.get("/sign-out")
    assert out.status_code == 303 and out.headers["location"] == "/sign-in"
    guarded.cookies.clear()
    assert guarded.get("/_dash-layout").status_code == 401


def test_a_wrong_token_is_refused_slowly_and_sets_nothing(guarded) -> None:
    start = time.monotonic()
    refused = guarded.post("/sign-in", data={"token": "guess", "next": "/"})
    assert refused.status_code == 401 and "not this server" in refused.text
    assert time.monotonic() - start >= 0.9
    assert "set-cookie" not in refused.headers


def test_sign_in_never_redirects_off_the_site(guarded) -> None:
    for target in ("//evil.example/x", "https://evil.example", "/\\evil.example", "evil"):
        signed = guarded.post("/sign-in", data={"token": TOKEN, "next": target})
        assert signed.headers["location"] == "/", target


def test_forged_expired_and_old_token_sessions_are_refused(settings_factory) -> None:
    app = create_app(settings_factory(api_token=TOKEN))
    with TestClient(app, raise_server_exceptions=False) as client:
        valid = SessionSigner(TOKEN, 3600).issue()
        expiry, _, mac = valid.partition(".")
        for forged in (f"{int(expiry) + 10_000}.{mac}",  # extended lifetime
                       SessionSigner(TOKEN, -10).issue(),  # expired
                       SessionSigner("old-token", 3600).issue(),  # token since changed
                       "", "x.y", TOKEN):
            client.cookies.set(SESSION_COOKIE, forged)
            assert client.get("/api/v1/datasets").status_code == 401, forged
        client.cookies.set(SESSION_COOKIE, valid)
        assert client.get("/api/v1/datasets").status_code == 200


def test_docs_can_be_made_public(settings_factory) -> None:
    app = create_app(settings_factory(api_token=TOKEN, public_docs=True))
    with TestClient(app) as client:
        for path in ("/docs", "/docs/oauth2-redirect", "/redoc",
                     "/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"):
            assert client.get(path).status_code == 200, path
        schema = client.get("/openapi.json").json()
        assert "HTTPBearer" in schema["components"]["securitySchemes"]
        assert client.get("/api/v1/datasets").status_code == 401
        # the docs' public folder leads nowhere else ("%2F" reaches the server as "/")
        for path in ("/docs/assets/..%2F..%2Fapi/v1/datasets", "/docs/assets/..%2F..%2Fdocs",
                     "/docs/assets/..%2F..%2F..%2F..%2Fetc%2Fpasswd"):
            response = client.get(path)
            assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


# -- cross-site requests ------------------------------------------------------------------
@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Referer": "http://evil.example/page.html"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Origin": "http://testserver.evil.example"},
])
def test_another_site_cannot_change_anything(client, headers) -> None:
    error = assert_error(_upload(client, headers=headers), 403, "cross_origin")
    assert "another site" in error["message"]
    assert client.get("/api/v1/datasets").json() == []
    dataset = _upload(client).json()
    assert client.delete(f"/api/v1/datasets/{dataset['id']}", headers=headers).status_code == 403
    assert client.post("/_dash-update-component", json=PICKER_CALLBACK,
                       headers=headers).status_code == 403
    assert [d["id"] for d in client.get("/api/v1/datasets").json()] == [dataset["id"]]


def test_the_servers_own_pages_and_scripts_may_change_things(client) -> None:
    own = {"Origin": "http://testserver", "Referer": "http://testserver/",
           "Sec-Fetch-Site": "same-origin"}
    assert _upload(client, headers=own).status_code == 201
    # reading is never refused by origin (a link from elsewhere may open the dashboard)
    assert client.get("/api/v1/datasets", headers={"Origin": "http://evil.example"}).json()


# -- DNS rebinding ------------------------------------------------------------------------
def test_host_header_is_checked_against_the_allow_list(settings_factory) -> None:
    app = create_app(settings_factory(allowed_hosts=""))  # the default, bound to 127.0.0.1
    for host, status in (("127.0.0.1:8050", 200), ("localhost:8050", 200), ("[::1]:8050", 200),
                         ("localhost", 200), ("rebound.evil.example:8050", 400),
                         ("127.0.0.1.evil.example", 400)):
        with TestClient(app, base_url=f"http://{host}") as client:
            response = client.get("/api/v1/datasets")
            assert response.status_code == status, host
            if status == 400:
                assert "CALIBDASH_ALLOWED_HOSTS" in response.json()["error"]["message"]


def test_allowed_hosts_setting(settings_factory) -> None:
    assert allowed_hosts(settings_factory(allowed_hosts="*")) is None
    assert allowed_hosts(settings_factory(allowed_hosts="a.example, B.example")) == {
        "a.example", "b.example"}
    assert allowed_hosts(settings_factory(allowed_hosts="", host="0.0.0.0")) is None
    assert "localhost" in (allowed_hosts(settings_factory(allowed_hosts="")) or ())


# -- bodies -------------------------------------------------------------------------------
def test_a_declared_oversized_body_is_refused_before_it_is_read(settings_factory) -> None:
    app = create_app(settings_factory(max_upload_bytes=1 << 20, max_request_bytes=1 << 16))
    with TestClient(app) as client:
        error = assert_error(client.post("/api/v1/uploads", content=b"x" * (3 << 20),
                                         headers={"Content-Type": "text/csv"}), 413, "too_large")
        assert "CALIBDASH_MAX_UPLOAD_BYTES" in error["message"]
        # the Dash endpoint and JSON routes get the (smaller) request limit
        error = assert_error(client.post("/_dash-update-component", content=b"{" * (1 << 17),
                                         headers={"Content-Type": "application/json"}),
                             413, "too_large")
        assert "CALIBDASH_MAX_REQUEST_BYTES" in error["message"]
        # uploading to a non-upload route gets the request limit too
        assert client.post("/api/v1/models", content=b"{" * (1 << 17)).status_code == 413


def test_a_streamed_body_is_cut_off_at_the_limit(settings_factory) -> None:
    settings = settings_factory(max_upload_bytes=1 << 20, max_request_bytes=1 << 16)

    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
        yield b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\n"
        for _ in range(64):
            yield b"1," * (1 << 15)

    with TestClient(create_app(settings)) as client:
        response = client.post("/api/v1/uploads", content=chunks(),
                               headers={"Content-Type": "multipart/form-data; boundary=b"})
        assert_error(response, 413, "too_large")
        response = client.post("/_dash-update-component", content=chunks(),
                               headers={"Content-Type": "application/json"})
        assert_error(response, 413, "too_large")
    incoming = settings.data_dir / "incoming"  # (uploads are dotfiles: not glob("*"))
    assert not incoming.exists() or not list(incoming.iterdir())


def test_a_second_lifespan_still_runs_jobs(settings_factory) -> None:
    """Test clients and schemathesis start and stop an app's lifespan more than once."""
    app = create_app(settings_factory())
    for _ in range(2):
        with TestClient(app) as client:
            dataset = _upload(client).json()
            started = client.post(f"/api/v1/datasets/{dataset['id']}/recalibrations",
                                  json={"method": "platt", "async": True})
            assert started.status_code == 202, started.text
            for _ in range(100):
                state = client.get(f"/api/v1/jobs/{started.json()['job_id']}").json()
                if state["status"] not in ("queued", "running"):
                    break
                time.sleep(0.1)
            assert state["status"] in ("succeeded", "failed"), state
