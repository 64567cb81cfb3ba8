# What one open event stream costs the local runner (issue 19): memory,
# goroutines and file descriptors, measured with 1,000 streams held open by
# another process; the figures go to docs/design.md ("Live updates").
.PHONY: stream-memory

## stream-memory: memory, goroutines and file descriptors per open event stream, 1,000 streams on each store, into docs/design.md (~20 s)
stream-memory: redis-server
	@mkdir -p build && rm -f build/stream-memory.md
	set -o pipefail; WAITROOM_STREAM_MEMORY_OUT=$(CURDIR)/build/stream-memory.md \
	  $(GO) test -count=1 -v -run '^TestMeasureStreamMemory$$' ./localrun | grep -E '^(ok|FAIL|\s*--- )|\| '
	$(GO) run ./cmd/fragment -file docs/design.md -name stream-memory <build/stream-memory.md
