// Package testsuite holds Durable Ralph's end-to-end tests: real worker and
// starter processes, an embedded Temporal server, real git repositories and
// a fake agent (./fakeclaude) that speaks Claude Code's command line and
// stream-json; and the benchmark of orchestration overhead per iteration.
package testsuite
