# What a store script's constructs cost redis-server (issue 36): callgrind
# instructions per EVALSHA of `return 1` (no key; enter's 13 keys and 11
# arguments) and of one construct each (closures, string.format, tonumber,
# a table, HGET/HMGET/HSET). Not part of `make test` (its rendering's check is).
.PHONY: bench-luafloor

## bench-luafloor: callgrind instructions per EVALSHA of the floor and of each Lua construct the store's scripts use (~1 min) into docs/bench/luafloor-results.json and docs/design.md ("What a poll costs Redis")
bench-luafloor: redis-server
	@$(call apt_install,valgrind,valgrind)
	@mkdir -p docs/bench
	$(GO) run ./bench/luafloor -out docs/bench/luafloor-results.json -doc docs/design.md
