"""Hostile Dash callback requests get a 400 that says what is wrong, not Dash's 500; a
well-formed one still reaches its callback."""

from __future__ import annotations

import pytest

URL = "/_dash-update-component"
GOOD = {"output": "dataset-store.data", "outputs": {"id": "dataset-store", "property": "data"},
        "inputs": [{"id": "dataset-picker", "property": "value", "value": "ds_x"}],
        "changedPropIds": ["dataset-picker.value"]}


@pytest.mark.parametrize(("body", "says"), [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"inputs": []}', "'output'"),
    (b'{"output": "x", "inputs": 3}', "'output'"),
    (b'{"output": "dataset-store.data", "inputs": [], "state": "s"}', "'state'"),
    (b'{"output": "..nothing.children..", "inputs": []}', "no callback updates"),
])
def test_malformed_callback_requests_are_400(client, body: bytes, says: str) -> None:
    response = client.post(URL, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_callback" and says in error["message"]


def test_a_well_formed_callback_request_still_runs(client) -> None:
    response = client.post(URL, json=GOOD)
    assert response.status_code == 200, response.text
    assert response.json()["response"]["dataset-store"]["data"] == "ds_x"
