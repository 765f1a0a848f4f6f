# Durable Ralph: `make test` is the whole test run (lint, unit, activity,
# end-to-end tests on an embedded Temporal server, and the benchmark).
# .ci/run calls exactly `make test`.

SHELL := /bin/bash

STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

.PHONY: test lint unit race e2e bench

test: lint unit race e2e bench

lint:
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...
	go run $(WORKFLOWCHECK) ./workflows/...

# Everything but the end-to-end package.
unit:
	go test -count=1 $$(go list ./... | grep -v /testsuite$$)

# The deterministic and concurrent code under the race detector.
race:
	go test -count=1 -race ./workflows/... ./activities/... ./config/...

# Real worker and starter processes, the fake agent and the embedded server.
e2e:
	go test -count=1 -timeout 30m -v ./testsuite/

# Orchestration overhead per iteration: Temporal session vs a plain loop.
bench:
	go test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 20m ./testsuite/
