"""What the browser journeys share: a wait that notices a change within 0.1 s.

Selenium's :class:`~selenium.webdriver.support.ui.WebDriverWait` looks every 0.5 s, so
each of a journey's waits ended on average a quarter of a second after the page was
ready, while the test worker held nothing for the other worker to use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from selenium.webdriver.support.ui import WebDriverWait as SeleniumWait

#: Seconds between two looks of a wait.
POLL_SECONDS = 0.1


class WebDriverWait(SeleniumWait):  # type: ignore[type-arg]
    """Selenium's wait, looking every :data:`POLL_SECONDS` by default."""

    def __init__(self, driver: Any, timeout: float, poll_frequency: float = POLL_SECONDS,
                 ignored_exceptions: Iterable[type[Exception]] | None = None) -> None:
        super().__init__(driver, timeout, poll_frequency, ignored_exceptions)
