# svc — make run: start the daemon; make test: the whole suite; make lint (Python and JS); make bench.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# The suite's test files run on this many workers (pytest-xdist); a file stays on one worker.
# Three on two cores: a third of the time a test waits (a daemon starting, a browser, a real
# timer), and the third worker fills it (docs/performance.md).
TEST_WORKERS ?= 3

.PHONY: run test lint format bench venv dev-venv assets test-fixtures agents clean screenshots localtunnel-cache

# The venv is made once per Python and requirements outside the clone and linked in
# (scripts/venv.sh: uv, pip where uv cannot).
$(VENV)/.base: requirements.txt .python-version scripts/venv.sh
	@scripts/venv.sh base
	@touch $@

$(VENV)/.dev: $(VENV)/.base requirements-dev.txt
	@scripts/venv.sh dev
	@touch $@

venv: $(VENV)/.base
dev-venv: $(VENV)/.dev

# The front end's modules (npm; its devDependencies too: axe-core for a test, Biome for `make lint`),
# copied as ES modules into static/vendor, where the import map in templates/dashboard.html
# resolves them (docs/dashboard.md). Quiet but for one line saying what it does (issue 43): the
# copies are not worth a screenful.
static/vendor/.installed: package.json package-lock.json
	@echo "svc: installing the dashboard's front-end modules (npm; the first time ~30 s)…"
	@npm install --no-audit --no-fund --silent
	@rm -rf static/vendor
	@mkdir -p static/vendor
	@cp node_modules/preact/dist/preact.mjs static/vendor/preact.js
	@cp node_modules/preact/hooks/dist/hooks.mjs static/vendor/preact-hooks.js
	@cp node_modules/htm/dist/htm.mjs static/vendor/htm.js
	@cp node_modules/@preact/signals/dist/signals.mjs static/vendor/signals.js
	@cp node_modules/@preact/signals-core/dist/signals-core.mjs static/vendor/signals-core.js
	@cp node_modules/@xterm/xterm/lib/xterm.mjs static/vendor/xterm.js
	@cp node_modules/@xterm/addon-fit/lib/addon-fit.mjs static/vendor/addon-fit.js
	@cp node_modules/marked/lib/marked.esm.js static/vendor/marked.js
	@cp node_modules/dompurify/dist/purify.es.mjs static/vendor/purify.js
	@cp node_modules/@highlightjs/cdn-assets/es/highlight.min.js static/vendor/highlight.js
	@cp node_modules/qrcode-generator/dist/qrcode.mjs static/vendor/qrcode.js
	@cp node_modules/uplot/dist/uPlot.esm.js static/vendor/uplot.js
	@cp node_modules/@xterm/xterm/css/xterm.css node_modules/uplot/dist/uPlot.min.css static/vendor/
	@mv static/vendor/uPlot.min.css static/vendor/uplot.css
	@touch $@

assets: static/vendor/.installed

# The preview tests run a real Vite dev server (hot reload through svc's proxy).
VITE_FIXTURE := tests/fixtures/previews/vite-app
$(VITE_FIXTURE)/node_modules/.installed: $(VITE_FIXTURE)/package.json $(VITE_FIXTURE)/package-lock.json
	cd $(VITE_FIXTURE) && npm install --no-audit --no-fund --silent
	@touch $@

# The real coding-agent CLIs (Claude Code + claude-agent-acp, Codex + codex-acp, Gemini CLI, Qwen
# Code, OpenCode; ~1.7 GB), pinned by the lock file, installed once per lock file into a cache
# outside the clone and linked in (scripts/install-agents.sh), so a fresh clone does not extract
# 1.7 GB again. No install script is needed (npm 11 skips them: claude-code, opencode-ai,
# node-pty and keytar work without). Tests run them with a throw-away HOME
# (harness/agents.py).
AGENTS_FIXTURE := tests/fixtures/agents
$(AGENTS_FIXTURE)/.installed: $(AGENTS_FIXTURE)/package.json $(AGENTS_FIXTURE)/package-lock.json scripts/install-agents.sh
	scripts/install-agents.sh

agents: $(AGENTS_FIXTURE)/.installed

# The real localtunnel in npx's cache (~/.npm/_npx), as svc runs it: a tunnel test runs the real
# tool offline and never downloads it (tests/remote_app/test_tunnel_failures.py).
localtunnel-cache:
	@npx -y localtunnel --help >/dev/null

test-fixtures: $(VITE_FIXTURE)/node_modules/.installed $(AGENTS_FIXTURE)/.installed localtunnel-cache

# `bin/svc run` itself (svcproject/management/commands/run.py): a port in use said at once,
# "migrating the database…" when there is anything to migrate, then daphne and the login URL.
run: venv assets
	@$(PY) manage.py run --host $(HOST) --port $(PORT)

# ruff for style; import-linter for the layers (.importlinter, docs/foundation.md): an import
# that points up, inside a function or not, fails the build; check-imports.py: no circle even
# through TYPE_CHECKING imports, at most 40 imports inside functions, each saying why; mypy for
# the types of core, holder, the composition root and every module handed the daemon's parts
# (pyproject.toml [tool.mypy]); Biome for the dashboard's own JS, static/svc (biome.jsonc; a
# devDependency, so `assets` installs it with the rest): a warning fails like an error, and the
# format is checked.
BIOME := node_modules/.bin/biome
lint: dev-venv assets
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/check-imports.py
	$(VENV)/bin/mypy
	$(BIOME) lint --error-on-warnings static/svc
	$(BIOME) format static/svc

format: dev-venv assets
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	$(BIOME) format --write static/svc
	$(BIOME) lint --write static/svc

# Bytecode caches stay on for the suite even where the environment turns them off
# (PYTHONDONTWRITEBYTECODE=1): its ~85 daemons and ~100 commands would otherwise each compile
# svc's sources again, 0.2 s of a daemon's 0.5 s of CPU to start (docs/performance.md).
test: dev-venv assets test-fixtures
	@scripts/ensure-services.sh
	@scripts/ensure-chromium.sh
	$(MAKE) --no-print-directory lint
	env -u PYTHONDONTWRITEBYTECODE SVC_HOME=$$(mktemp -d) $(PY) -m pytest -p harness.worker_home -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The README's screenshots, taken by the layout test (desktop and phone, light and dark).
screenshots: dev-venv assets
	@scripts/ensure-chromium.sh
	SVC_UPDATE_SCREENSHOTS=1 SVC_HOME=$$(mktemp -d) $(PY) -m pytest -p harness.worker_home -q tests/e2e/test_dashboard_layout.py -k every_view

bench: dev-venv assets
	@scripts/ensure-services.sh
	@for b in bench/*.py; do echo "== $$b"; SVC_HOME=$$(mktemp -d) $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) node_modules static/vendor
