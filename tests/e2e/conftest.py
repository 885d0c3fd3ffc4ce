"""End-to-end fixtures: dist/ served on 127.0.0.1, Debian Chromium driven by Playwright.

Every page records each request it makes; a test fails if any of them left 127.0.0.1.
Fixture files (the real unstorage bundle, a blank page) are served under /__e2e__/.
"""

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from browser_flags import CHROMIUM, CHROMIUM_FLAGS

ROOT = Path(__file__).resolve().parents[2]
# build/ is a folder of scripts, not a package (pypa's `build` owns that import name).
_spec = importlib.util.spec_from_file_location("airi_serve", ROOT / "build" / "serve.py")
serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve)
DIST = ROOT / "dist"
FIXTURES = Path(__file__).parent / "fixtures"
SERVED = ROOT / "build" / "out" / "e2e-root"


@pytest.fixture(scope="session")
def served_root() -> Path:
    """dist/ plus the e2e fixtures, assembled in build/out (dist itself stays as built)."""
    if not (DIST / "airi-memory.mjs").exists():
        pytest.fail("dist/ is not built: run `make dist` (make test does)")
    shutil.rmtree(SERVED, ignore_errors=True)
    shutil.copytree(DIST, SERVED, symlinks=True)
    fixtures = SERVED / "__e2e__"
    fixtures.mkdir()
    shutil.copy(FIXTURES / "page.html", fixtures / "page.html")
    subprocess.run(
        [str(ROOT / "node_modules/.bin/esbuild"), str(FIXTURES / "unstorage-entry.mjs"),
         "--bundle", "--format=esm", f"--outfile={fixtures / 'unstorage.mjs'}", "--log-level=warning"],
        check=True, cwd=ROOT,
    )  # fmt: skip
    return SERVED


@pytest.fixture(scope="session")
def base_url(served_root):
    server = serve.start_in_thread(served_root)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def playwright():
    with sync_playwright() as instance:
        yield instance


@pytest.fixture(scope="session")
def browser(playwright):
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
    yield browser
    browser.close()


class RecordedPage:
    """A page plus every URL it (or its workers) asked for."""

    def __init__(self, page, base_url: str, requests: list[str]) -> None:
        self.page = page
        self.base_url = base_url
        self.requests = requests

    def open_harness(self) -> None:
        self.page.goto(f"{self.base_url}/__e2e__/page.html")

    def evaluate(self, script: str, arg=None):
        return self.page.evaluate(script, arg)

    def open_demo(self, session_title: str) -> None:
        """The demo page, ready, with a new session of that title active."""
        self.page.goto(f"{self.base_url}/demo/")
        self.page.wait_for_selector("#status[data-state=ready]", timeout=60_000)
        self.page.fill("#new-session-title", session_title)
        self.page.click("#new-session")
        self.page.wait_for_selector(f"#session-list li.active button:has-text('{session_title}')")

    def send_in_demo(self, text: str) -> None:
        self.page.fill("#message-input", text)
        self.page.click("#send-message")
        self.page.wait_for_selector(f"#messages li:has-text('{text}')")

    def boot(self, user_id: str = "e2e") -> dict:
        """Create the memory system in the page as ``window.memory``, wait until it has
        loaded; return its summary."""
        return self.evaluate(
            """async (userId) => {
                const { createMemorySystem } = await import('/airi-memory.mjs');
                window.memory = await createMemorySystem({ userId });
                const m = await window.memory.whenLoaded;
                return { ready: m.ready, loaded: m.loaded, bootMs: m.bootMs, userId: m.userId,
                         versions: m.versions, mounts: m.mounts };
            }""",
            user_id,
        )


class Profiles:
    """Browser profiles (contexts: each its own IndexedDB, cookies, workers), as separate
    devices are; every request of every one recorded in ``requests``."""

    def __init__(self, browser, base_url: str) -> None:
        self.browser, self.base_url = browser, base_url
        self.contexts: list = []
        self.requests: list[str] = []

    def open(self) -> RecordedPage:
        context = self.browser.new_context()
        context.on("request", lambda request: self.requests.append(request.url))
        # Outside requests are recorded above and stopped here, before they leave the machine.
        context.route(lambda url: not _is_local(url), lambda route: route.abort())
        page = context.new_page()
        page.set_default_timeout(60_000)
        self.contexts.append(context)
        return RecordedPage(page, self.base_url, self.requests)


@pytest.fixture
def profiles(browser, base_url):
    made = Profiles(browser, base_url)
    yield made
    for context in made.contexts:
        context.close()
    outside = [url for url in made.requests if not _is_local(url)]
    assert not outside, f"the page requested addresses outside 127.0.0.1: {outside}"


@pytest.fixture
def web(profiles):
    return profiles.open()


def _is_local(url: str) -> bool:
    return url.startswith(("http://127.0.0.1:", "blob:", "data:"))
