# airi-memory: every entry point. Each target does its own set-up when needed.
PORT ?= 8000
VENV := .venv
PY := $(VENV)/bin/python
STAMP_VENV := $(VENV)/.installed
STAMP_NPM := node_modules/.installed

.PHONY: demo dist package browser postgres test test-unit test-server test-pyodide test-e2e soak bench bench-sync eval lint format clean sync-server sync-user

$(STAMP_VENV): requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.txt
	touch $@

$(STAMP_NPM): package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

dist: $(STAMP_VENV) $(STAMP_NPM)
	$(PY) build/build_dist.py

# The npm package: build/out/airi-memory-<version>.tgz, packed from dist/ as package.json's
# `files` lists; its prepack script refuses to pack a promised file that is missing.
package: dist
	mkdir -p build/out
	npm pack --pack-destination build/out

# Debian's Chromium and ChromeDriver for the browser tests: installed when missing (as root,
# with apt), else a stop at once with the one command to run. System python3: no venv yet.
browser:
	python3 build/ensure_browser.py

# Debian's PostgreSQL for the sync server's tests, which start a throwaway cluster of their
# own from its binaries: installed when missing (as root, with apt), else the command to run.
postgres:
	python3 build/ensure_postgres.py

# The sync server (server/airi_memory_server) on 127.0.0.1:SYNC_PORT over SYNC_DB: a SQLite
# file (default) or a postgresql:// URL. It migrates the schema first.
SYNC_PORT ?= 8787
SYNC_DB ?= build/sync.sqlite3
SYNC_SERVER := PYTHONPATH=server:py $(PY) -m airi_memory_server --db "$(SYNC_DB)"

sync-server: $(STAMP_VENV)
	$(SYNC_SERVER) serve --host 127.0.0.1 --port $(SYNC_PORT)

# A user (or a new key for an existing one) in SYNC_DB; the API key is the last line.
sync-user: $(STAMP_VENV)
	@test -n "$(NAME)" || { echo "usage: make sync-user NAME=alice" >&2; exit 2; }
	@$(SYNC_SERVER) create-user "$(NAME)"

# The demo page, and beside it the sync server on SYNC_PORT (SQLite at SYNC_DB) with a key
# for user `demo` that the page offers to use: sync works out of the box once turned on.
demo: dist
	@echo "airi-memory demo: http://127.0.0.1:$(PORT)/"
	$(PY) build/serve.py --port $(PORT) --sync-port $(SYNC_PORT) --sync-db "$(SYNC_DB)"

test: browser postgres lint dist
	node --test tests/js/
	$(PY) -m pytest

test-unit: $(STAMP_VENV)
	$(PY) -m pytest tests/unit

test-server: postgres $(STAMP_VENV)
	$(PY) -m pytest tests/server

# The fault suite at full size: 1,000 fuzzed import files, 1,000 other fuzzed inputs,
# then in Chromium 100 reloads or closes and 100 SIGKILLs mid-write, and long tab runs.
soak: browser dist
	AIRI_SOAK=1 $(PY) -m pytest tests/faults tests/e2e/faults

bench: browser dist
	$(PY) bench/run.py

# A bounded load test of the sync server (no browser): a throwaway PostgreSQL, 3 server
# processes, 12 devices pushing and pulling on loopback for 20 s, then a check that every
# acknowledged operation is there exactly once and every device pulled its user's log in
# order. Appends to build/out/bench-sync.jsonl. BENCH_SYNC_ARGS="--seconds 60" to change it.
bench-sync: postgres $(STAMP_VENV)
	$(PY) bench/sync_load.py $(BENCH_SYNC_ARGS)

eval: browser dist
	$(PY) bench/eval/run_eval.py

# Style, then the import contract (layers; js/pyodide only in py/airi_memory/browser).
# No caches: import-linter once kept a verdict for a file edited back within the same
# second, and ruff keeps a file's import order verdict when a module it imports moves.
lint: $(STAMP_VENV)
	$(PY) -m ruff check --no-cache . && $(PY) -m ruff format --check --no-cache .
	PYTHONPATH=py $(VENV)/bin/lint-imports --no-cache

format: $(STAMP_VENV)
	$(PY) -m ruff check --fix . && $(PY) -m ruff format .

clean:
	rm -rf dist build/out
