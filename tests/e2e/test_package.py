"""The npm package as a JavaScript developer gets it: packed, installed, bundled, booted.

`npm pack` of the built repository, `npm install` of that tarball offline into an app in
a temporary folder (outside the repository, so nothing resolves from our node_modules),
esbuild bundling the app's `import { createMemorySystem } from "airi-memory"`, and the
runtime folder copied where README's "Using the package" says, served by a plain static
server. The app then creates a memory system, adds a message and reads it back.
"""

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, serve

PACKAGE_NAME = "airi-memory"
# Where the app serves the package's runtime folder: /airi-memory/runtime/, so the app
# passes baseUrl /airi-memory/ (the folder that holds runtime/).
RUNTIME_PARENT = "airi-memory"
APP_SOURCE = """\
import { createMemorySystem } from "airi-memory";

async function run() {
  const baseUrl = new URL("/airi-memory/", location.href); // as README says: absolute
  const memory = await createMemorySystem({ userId: "package-app", baseUrl });
  try {
    const { sessionId } = await memory.sessions.createSession({ title: "From the package" });
    await memory.sessions.addMessage(sessionId, { role: "user", content: "Hello from a bundled app" });
    const messages = await memory.sessions.loadSessionMessages(sessionId);
    const sessions = await memory.sessions.listSessions({ limit: 20 });
    return {
      userId: memory.userId,
      version: memory.versions.airiMemory,
      titles: sessions.map((session) => session.title),
      messages: messages.map(({ role, content }) => ({ role, content })),
    };
  } finally {
    await memory.close();
  }
}

run().then(
  (result) => { window.appResult = result; },
  (error) => { window.appResult = { error: `${error.name}: ${error.message}` }; },
);
"""
APP_PAGE = """\
<!doctype html>
<html><head><meta charset="utf-8"><title>package app</title></head>
<body><script type="module" src="/assets/app.js"></script></body></html>
"""


def pack(destination: Path) -> Path:
    """`npm pack` of the repository into ``destination``; its prepack check refuses to
    pack when a file package.json promises (dist/airi-memory.d.ts ...) is missing, and
    says so on stderr, left uncaptured here so that pytest shows it."""
    packed = subprocess.run(
        ["npm", "pack", "--json", "--loglevel=error", f"--pack-destination={destination}"],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    (entry,) = json.loads(packed.stdout)
    return destination / entry["filename"]


def install(tarball: Path, app: Path) -> Path:
    """A new app that installs the tarball offline (the package may depend on nothing, so
    there is nothing to fetch); returns the installed package's folder."""
    app.mkdir(parents=True)
    (app / "package.json").write_text(
        json.dumps({"name": "package-app", "private": True, "type": "module"})
    )
    subprocess.run(
        ["npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error",
         f"--cache={app / '.npm-cache'}", str(tarball)],
        cwd=app, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return app / "node_modules" / PACKAGE_NAME


def bundle(app: Path) -> Path:
    """The app's page and esbuild bundle in ``app/public``, with the package's runtime
    folder copied to public/airi-memory/runtime as README says; returns that folder."""
    public = app / "public"
    (app / "src").mkdir()
    (app / "src" / "main.mjs").write_text(APP_SOURCE)
    subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "esbuild"), "src/main.mjs", "--bundle",
         "--format=esm", "--outfile=public/assets/app.js", "--log-level=warning"],
        cwd=app, check=True,
    )  # fmt: skip
    shutil.copytree(
        app / "node_modules" / PACKAGE_NAME / "dist" / "runtime",
        public / RUNTIME_PARENT / "runtime",
    )
    (public / "index.html").write_text(APP_PAGE)
    return public


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder outside the repository, removed afterwards: the tarball, npm's cache, the
    installed package and the app's copy of the runtime come to ~400 MB."""
    with tempfile.TemporaryDirectory(prefix="airi-package-app-") as folder:
        yield Path(folder)


def test_the_packed_tarball_boots_in_a_bundled_app(web, scratch):
    package = install(pack(scratch), scratch / "app")
    version = json.loads((ROOT / "package.json").read_text())["version"]
    # Only the package was installed (no dependency of its own), and only what it ships:
    # the module, its method map, its declarations and the runtime; not the demo.
    installed = [path.name for path in package.parent.iterdir() if not path.name.startswith(".")]
    assert installed == [PACKAGE_NAME]
    assert sorted(path.name for path in (package / "dist").iterdir()) == [
        "airi-memory-methods.mjs", "airi-memory.d.ts", "airi-memory.mjs", "runtime",
    ]  # fmt: skip
    public = bundle(scratch / "app")

    server = serve.start_in_thread(public)
    try:
        app_url = f"http://127.0.0.1:{server.server_address[1]}/"
        web.page.goto(app_url)
        web.page.wait_for_function("window.appResult !== undefined", timeout=60_000)
        result = web.evaluate("window.appResult")
    finally:
        server.shutdown()

    assert result == {
        "userId": "package-app",
        "version": version,
        "titles": ["From the package"],
        "messages": [{"role": "user", "content": "Hello from a bundled app"}],
    }
    # The bundle found the runtime through baseUrl, in the copy beside it.
    assert f"{app_url}{RUNTIME_PARENT}/runtime/worker.mjs" in web.requests
