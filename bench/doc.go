// Package bench holds Waitroom's micro-benchmarks against a real Redis:
// the handler paths beside redis-benchmark running the same Lua scripts,
// position latency with many users waiting, and memory per waiting user.
// Run them with `make bench` (or see BENCHMARKS.md); they are not part of
// `make test`.
package bench
