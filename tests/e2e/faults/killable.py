"""Debian's Chromium as a process the fault tests can SIGKILL whole and start again on the
same profile folder, and the folders of that profile they look into."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from browser_flags import CHROMIUM, CHROMIUM_FLAGS


class KillableChromium:
    """Debian's Chromium as its own process group on a profile folder, driven over CDP,
    so the test can SIGKILL the whole browser and start it again on the same profile."""

    def __init__(self, playwright, profile: Path) -> None:
        self.playwright = playwright
        self.profile = profile
        self.log = profile.with_name(profile.name + ".log")  # IndexedDB's own log lines
        self.stored = profile / "Default" / "IndexedDB"
        self.as_killed = profile.with_name("IndexedDB-as-killed")  # before the last start
        self.process = None
        self.browser = None

    def start(self):
        (self.profile / "DevToolsActivePort").unlink(missing_ok=True)
        # As the kill left it: Chromium deletes a database it finds corrupt on opening.
        shutil.rmtree(self.as_killed, ignore_errors=True)
        if self.stored.exists():
            shutil.copytree(self.stored, self.as_killed)
        with self.log.open("a") as log:
            log.write(f"---- start {time.time():.3f}\n")
            self.process = subprocess.Popen(
                [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}",
                 "--enable-logging=stderr", "--vmodule=*indexed_db*=1,*leveldb*=1",
                 "--remote-debugging-port=0", "about:blank"],
                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
            )  # fmt: skip
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not open its DevTools port")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        self.browser = self.playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
        context = self.browser.contexts[0]
        context.route(lambda url: not url.startswith("http://127.0.0.1:"), lambda r: r.abort())
        return context

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.browser = None  # its connection died with it

    def keep_evidence(self, evidence: Path) -> None:
        """Keep the profile's IndexedDB and Chromium's log where CI leaves its output, so
        a lost round can be taken apart afterwards."""
        shutil.rmtree(evidence, ignore_errors=True)
        evidence.mkdir(parents=True)
        shutil.copy(self.log, evidence / "chromium.log")
        for folder in (self.stored, self.as_killed):
            if folder.exists():
                shutil.copytree(folder, evidence / folder.name)
