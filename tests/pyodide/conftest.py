"""pytest-pyodide in Debian's Chromium, offline.

Its selenium runner starts Chrome with no driver path, which sends Selenium Manager to
the network; we give it Debian's chromium and chromedriver instead.
"""

import multiprocessing
import os

import pytest
from pytest_pyodide import get_global_config
from pytest_pyodide.runner import SeleniumChromeRunner

from browser_flags import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS

# pytest-pyodide serves the dist from a child process. Forked from this process, which
# has run the unit tests' native DuckDB threads, that child can crash (seen in CI:
# segfault in the server, then "loadPyodide is not defined"). Spawn a clean one.
multiprocessing.set_start_method("spawn", force=True)

os.environ.setdefault("SE_OFFLINE", "true")
os.environ.setdefault("SE_AVOID_STATS", "true")


def _debian_chromium(self, jspi: bool = False):
    from selenium.common.exceptions import SessionNotCreatedException
    from selenium.webdriver import Chrome
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    try:
        return Chrome(options=options, service=Service(CHROMEDRIVER))
    except SessionNotCreatedException:  # a browser that died starting up: one more try
        return Chrome(options=options, service=Service(CHROMEDRIVER))


SeleniumChromeRunner.get_driver = _debian_chromium
# The runner's script timeout also bounds its own start-up: opening the page and loading
# Pyodide. Its 20 s default was too short on a cold CI machine (every case of the first
# module errored in setup), so allow 2 minutes; a case that hangs still fails.
SeleniumChromeRunner.script_timeout = 120

# module_test.html defines loadPyodide from a module script, which may still be loading
# when the runner first calls it (seen on a cold machine): wait for it, up to 60 s.
get_global_config().set_load_pyodide_script(
    "chrome",
    """
    for (let waited = 0; typeof loadPyodide === "undefined"; waited += 50) {
        if (waited > 60000) throw new Error("pyodide.mjs did not load within 60 s");
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
    let pyodide = await loadPyodide({ fullStdLib: false, jsglobals: self });
    """,
)


@pytest.fixture
def browser_host(selenium):
    """The same JS host the worker gives Python (IndexedDB + DuckDB-WASM), as ``airiHost``."""
    selenium.run_js(
        """
        if (!globalThis.airiHost) {
            const { createBrowserHost } = await import('./host.mjs');
            globalThis.createAiriHost = createBrowserHost;
            globalThis.airiHost = await createBrowserHost({ runtimeUrl: new URL('./', location.href).href });
        }
        """
    )
    return selenium
