"""What the browser journeys share: waits that notice a change within 0.1 s, reading an
element's text, uploading a file through the API and waiting for a download.

Selenium's :class:`~selenium.webdriver.support.ui.WebDriverWait` looks every 0.5 s, so
each of a journey's waits ended on average a quarter of a second after the page was
ready, while the test worker held nothing for the other worker to use.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx2
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait as SeleniumWait

#: Seconds between two looks of a wait.
POLL_SECONDS = 0.1


class WebDriverWait(SeleniumWait):  # type: ignore[type-arg]
    """Selenium's wait, looking every :data:`POLL_SECONDS` by default."""

    def __init__(self, driver: Any, timeout: float, poll_frequency: float = POLL_SECONDS,
                 ignored_exceptions: Iterable[type[Exception]] | None = None) -> None:
        super().__init__(driver, timeout, poll_frequency, ignored_exceptions)


def wait(browser: Any, seconds: float = 30) -> WebDriverWait:
    return WebDriverWait(browser, seconds)


def text_of(browser: Any, selector: str) -> str:
    """The visible text of the first element matching a CSS selector."""
    return str(browser.find_element(By.CSS_SELECTOR, selector).text)

def choose(browser: Any, dropdown_id: str, starts_with: str) -> None:
    """Pick the option of a Dash dropdown whose text starts with ``starts_with``."""
    browser.find_element(By.ID, dropdown_id).click()
    option = wait(browser).until(lambda b: next(
        (o for o in b.find_elements(By.CSS_SELECTOR, "[role=option]")
         if o.text.strip().startswith(starts_with)), False))
    option.click()


def upload_via_api(server: str, path: Path) -> str:
    """Upload a prediction file through ``POST /api/v1/datasets``; the new dataset's id."""
    with path.open("rb") as content:
        response = httpx2.post(f"{server}/api/v1/datasets", files={"file": (path.name, content)},
                               timeout=60)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def wait_for_download(directory: Path, pattern: str, seconds: float = 30) -> Path:
    """The first file matching ``pattern`` in ``directory`` once it has content."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done = sorted(directory.glob(pattern))
        if done and done[0].stat().st_size > 0:
            return done[0]
        time.sleep(0.2)
    raise AssertionError(f"no {pattern} download in {directory}: {list(directory.iterdir())}")
