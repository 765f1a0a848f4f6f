# Durable Ralph: `make test` is the whole test run (lint, unit, activity,
# end-to-end tests on an embedded Temporal server, and the benchmark).
# .ci/run calls exactly `make test`.

SHELL := /bin/bash

STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

.PHONY: test deps lint unit race e2e bench install soak docs

test: deps lint unit race e2e bench

# The two commands, starter and worker, into `go env GOBIN` (or
# $GOPATH/bin), as the README says. Both embed a Temporal
# server, so the first build downloads its modules and compiles it: several
# minutes during which go prints nothing but "go: downloading" lines.
install:
	@bin="$$(go env GOBIN)"; [ -n "$$bin" ] || bin="$$(go env GOPATH)/bin"; \
	echo "Building starter and worker into $$bin: go install ./cmd/starter ./cmd/worker"; \
	echo "Both have a Temporal server built in: the first build downloads its modules and compiles it, which takes"; \
	echo "several minutes with nothing but 'go: downloading' lines meanwhile. Later builds take seconds."
	go install ./cmd/starter ./cmd/worker
	@bin="$$(go env GOBIN)"; [ -n "$$bin" ] || bin="$$(go env GOPATH)/bin"; \
	echo "Installed $$bin/starter and $$bin/worker."; \
	case ":$$PATH:" in *":$$bin:"*) ;; *) echo "$$bin is not on your PATH: add it (export PATH=\"$$bin:\$$PATH\") to run starter and worker by name.";; esac

# Tools the tests need beyond Go and git, from Debian: docker-compose
# validates docker-compose.yml offline; chromium runs the browser test
# against the embedded Temporal UI; postgresql-15 backs the Temporal cluster
# of testsuite/cluster; bubblewrap and socat contain the agents (sandbox/).
# Versions are pinned to Debian 12's; a security
# update that retires a pinned version falls back to the current one rather
# than failing the run. Go tools are pinned above and run with `go run`.

deps:
	@missing=""; \
	command -v docker-compose >/dev/null || missing="$$missing docker-compose=1.29.2-3"; \
	command -v chromium >/dev/null || missing="$$missing chromium=156.0.8078.79-1~deb12u1"; \
	test -x /usr/lib/postgresql/15/bin/initdb || missing="$$missing postgresql-15=15.20-0+deb12u1"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap=0.8.0-2+deb12u1"; \
	command -v socat >/dev/null || missing="$$missing socat=1.7.4.4-2"; \
	if [ -n "$$missing" ]; then \
		apt-get update -qq && \
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$(echo $$missing | sed 's/=[^ ]*//g') >/dev/null; }; \
	fi

lint: deps
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...
	go run $(WORKFLOWCHECK) ./workflows/...
	docker-compose -f docker-compose.yml config -q

# Writes docs/configuration.md's table of settings from config's keys
# (TestConfigurationTable fails until it is written).
docs:
	go test -count=1 ./cmd/starter/ -run TestConfigurationTable -update

# Everything but the end-to-end packages.
unit:
	go test -count=1 $$(go list ./... | grep -v /testsuite)

# The deterministic and concurrent code under the race detector.
race:
	go test -count=1 -race ./contract/... ./workflows/... ./activities/... ./agent/... ./tasks/... ./git/... ./config/...

# The real Claude Code CLI, pinned, for testsuite/realcli_test.go (it runs
# against a scripted local model server). Installed once into .cache/, again
# only when the installed version differs.
CLAUDE_CODE_VERSION := 2.1.329
.PHONY: claude
claude:
	@grep -qs '"version": "$(CLAUDE_CODE_VERSION)"' .cache/claude-code/node_modules/@anthropic-ai/claude-code/package.json && \
	  test -x .cache/claude-code/node_modules/.bin/claude || \
	  npm install --no-audit --no-fund --prefix .cache/claude-code @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)

# The real Codex and Gemini CLIs, pinned, for testsuite/codex_test.go and
# testsuite/gemini_test.go (each against a scripted local API server).
CODEX_VERSION  := 0.169.0
GEMINI_VERSION := 0.61.0
.PHONY: codex gemini agents
codex:
	@grep -qs '"version": "$(CODEX_VERSION)"' .cache/codex/node_modules/@openai/codex/package.json && \
	  test -x .cache/codex/node_modules/.bin/codex || \
	  npm install --no-audit --no-fund --prefix .cache/codex @openai/codex@$(CODEX_VERSION)
gemini:
	@grep -qs '"version": "$(GEMINI_VERSION)"' .cache/gemini-cli/node_modules/@google/gemini-cli/package.json && \
	  test -x .cache/gemini-cli/node_modules/.bin/gemini || \
	  npm install --no-audit --no-fund --prefix .cache/gemini-cli @google/gemini-cli@$(GEMINI_VERSION)
agents: claude codex gemini

# Real worker and starter processes, the fake agent, the embedded server and
# the PostgreSQL-backed cluster. One package at a time (-p 1): their servers
# pick free ports, and two packages at once could race for one.
e2e: agents
	go test -p 1 -count=1 -timeout 40m -v ./testsuite/...

# The chaos soak, bigger than the 2-minute one `make e2e` runs: 30 sessions
# of 8 stories on one worker process, whose driver kills the worker (-9,
# then starts it again), kills agents (-9) and stops the worker (SIGSTOP
# for 15 s) at random for 10 minutes, then checks every story, commit and
# total and prints a table (lines starting with SOAK). RALPH_SOAK_SEED
# replays a run's plan of faults.
soak:
	RALPH_SOAK_SESSIONS=30 RALPH_SOAK_STORIES=8 RALPH_SOAK_MINUTES=10 \
	  go test -count=1 -p 1 -timeout 60m -run '^TestChaosSoak$$' -v ./testsuite/

# The cost of an iteration (a bare bash loop, Ralph's plain loop, a
# session, a contained one), the sandbox's start, repository size, a
# 600-iteration session and N sessions on one worker: each prints its
# figures (docs/durability.md, "The cost of an iteration" and "Scale on one worker").
bench:
	go test -count=1 -run '^$$' -bench . -benchtime 20x ./sandbox/
	go test -count=1 -run '^$$' -bench '^BenchmarkIterationRecords$$' -benchtime 2000x ./activities/
	go test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 20m ./testsuite/

# The fleet benchmark (not part of make test): 1,000 short sessions at each
# of a few concurrencies on the PostgreSQL-backed cluster with three worker
# processes; see BenchmarkFleet for its RALPH_BENCH_FLEET_* settings.
.PHONY: bench-fleet
bench-fleet: deps
	RALPH_BENCH_FLEET=1 go test -count=1 -run '^$$' -bench '^BenchmarkFleet$$' -benchtime 1x -timeout 90m ./testsuite/
