"""A headless Chromium for browser tests: Debian's ``chromium`` through its ``chromedriver``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@contextmanager
def headless_chromium(work_dir: Path) -> Iterator[Any]:
    """A Selenium driver for a fresh Chromium profile in ``work_dir`` (quit on exit)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(), \
        "Debian's chromium and chromium-driver are needed (.ci/run installs them)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-proxy-server", "--window-size=1366,900", "--no-first-run",
                f"--user-data-dir={work_dir / 'chromium-profile'}"):
        options.add_argument(arg)
    service = Service(CHROMEDRIVER, log_output=str(work_dir / "driver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()
