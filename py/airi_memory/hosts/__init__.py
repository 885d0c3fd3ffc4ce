"""Where the core runs: each module wires the ports for one place (browser, CPython)."""
