package envconfig

import (
	"fmt"
	"strings"
)

// Variable is a row of docs/API.md's "Configuration" table: a variable's
// name, its default as people read it, and what it means. The table is
// written from Variables (WAITROOM_UPDATE_DOCS=1 go test -run
// TestVariablesTableIsGenerated ./envconfig, or make variables-doc), and
// TestVariablesTableMatchesCode holds every row to what Load reads: each
// variable Load reads has a row, each row a variable, and each default and
// range the code has is the row's.
type Variable struct{ Name, Default, Meaning string }

// Variables is every variable of the configuration, in the table's order.
var Variables = []Variable{
	{"REDIS_URL", "local runner: embedded store; functions: required", "`redis://` or `rediss://` (TLS) URL"},
	{"REDIS_CLUSTER", "`false`", "`true` for a cluster-mode endpoint (ElastiCache Serverless, cluster mode enabled): `REDIS_URL` then names one or more seed nodes, e.g. `rediss://host:6379?addr=host2:6379`"},
	{"REDIS_IAM_USER", "unset", "ElastiCache user id of an IAM-enabled user (user name = user id; a letter, then letters, digits and single hyphens, at most 40). Setting it turns IAM authentication on: each new cache connection sends `AUTH <user> <token>`, the token a SigV4-presigned `connect` request signed locally with the function role's credentials (valid 15 minutes; one token serves new connections for 10 minutes; connections are recycled after 11 hours). Requires a `rediss://` `REDIS_URL` without user or password, and `AWS_REGION`"},
	{"REDIS_IAM_CACHE_NAME", "unset", "required with `REDIS_IAM_USER`: the serverless cache name, or the replication group id with `REDIS_IAM_SERVERLESS=false`"},
	{"REDIS_IAM_SERVERLESS", "`true`", "`true` for ElastiCache Serverless (the token carries `ResourceType=ServerlessCache`), `false` for a node-based replication group; only with `REDIS_IAM_USER`"},
	{"ADMIT_RATE_PER_SEC", "`100`", "admissions per second per room (may be fractional; 0.001 to 1000000)"},
	{"ADMIT_INTERVAL_MS", "`100`", "time between batches (10 to 60000)"},
	{"ADMIT_BATCHES", "`10`", "batches per admit invocation: one invocation covers `ADMIT_BATCHES × ADMIT_INTERVAL_MS` (1 to 100000)"},
	{"ENTRY_TOKEN_TTL_SECONDS", "`300`", "life of an entry token (1 to 86400)"},
	{"QUEUE_CAPACITY", "`100000`", "most users waiting in one room; then `429 queue_full` (1 to 1000000000)"},
	{"POLL_TIERS", "`0:60000`", "poll tiers, `minWaitSeconds:pollMs` pairs (see \"Estimated wait and when to ask again\")"},
	{"ORDER_API_URL", "local runner: built-in demo order service; order-gate function: required", "downstream base URL, `http://` or `https://` (`/orders` is appended)"},
	{"ORDER_TIMEOUT_MS", "`10000`", "order gate's downstream timeout (1 to 900000)"},
	{"ORDER_ROOMS", "unset: the rooms an operator created", "the rooms whose entry tokens the order gate takes; a token of another room is `403 wrong_room` before any downstream call. Unset (the default since issue 32; before, any room): only rooms created with `PUT /admin/rooms/{room}` (the local runner's demo sale room `tv` too, while its demo order API runs); comma-separated names: those rooms; `*` alone: every room (the old default; the CDK stack refuses it with `openRooms=true`). Name the sale's rooms when one order API serves only some of several created rooms"},
	{"TRUST_USER_HEADER", "local runner: `true`; functions: `false`", "accept `X-User-Id` (see \"Who is asking\"): requires `PROXY_SECRET`, except in a local runner listening on loopback only"},
	{"PROXY_SECRET", "unset", "only with `TRUST_USER_HEADER=true`: `X-User-Id` is believed only on requests whose `X-Proxy-Secret` equals this value (16 to 512 visible ASCII characters; use 32 or more random ones). Never logged"},
	{"ORIGIN_SECRET", "unset", "set by the stack when CloudFront fronts the API (the waiting page): the secret CloudFront adds to every request as `X-Origin-Secret` (compared in constant time). Requests without it are `403 forbidden`; with it, the limiter counts the visitor by `CloudFront-Viewer-Address` instead of CloudFront's own address (16 to 512 visible ASCII characters). Never logged"},
	{"TRUSTED_PROXIES", "unset: every request is counted by its peer's address", "comma-separated CIDRs (`10.0.0.0/8`, `fd00::/8`) or single addresses of the reverse proxies in front: a request whose peer is one of them is counted (abuse limiter, stream caps) by the client they report in `X-Forwarded-For` or `Forwarded` (\"Abuse limiter\"). Never makes `X-User-Id` believed. A value that is not a CIDR or address, a `/0` (it would trust every peer: any client could name its own address), or the variable set with `ORIGIN_SECRET` (behind CloudFront the viewer is `CloudFront-Viewer-Address`): the process refuses to start, naming it. The CDK stack never sets it: API Gateway's `sourceIp` is the client, or CloudFront's viewer with `ORIGIN_SECRET`"},
	{"ORDER_GATE_FAIL_OPEN", "`false`", "while the store is down, let orders through unguarded instead of `503`; while the order record (`ORDER_RECORD_TABLE`) cannot be reached, let orders through guarded by the store's lock and token alone instead of `503` (a failover of the store in that time may then let a token buy twice: the shop trades \"once\" for selling through a DynamoDB outage)"},
	{"ORDER_RECORD_TABLE", "none", "the DynamoDB table of the order record: one item per token the gate lets through, written with a conditional put before the order goes downstream, so that a token buys once across any failover of the store (see `POST /orders`). The stack creates the table and sets it on the order gate; unset (the default of `make run` with its embedded store), the store's lock and commit are the only record, which a failover can lose. A name of 3 to 255 characters of `a-z A-Z 0-9 _ . -`"},
	{"ORDER_RECORD_ENDPOINT", "none", "a DynamoDB-compatible endpoint (`http://` or `https://`) instead of AWS's, for local runs and tests (`make dynalite` installs dynalite; the local runner then creates the table when missing); only with `ORDER_RECORD_TABLE`"},
	{"DURABLE_WRITES", "`off`", "`wait`: the order gate's check (its lock) and commit are each followed by `WAIT 1 250` in the same pipeline, on the same connection (still one round trip each): no order goes downstream before its lock has reached a replica, and the gate answers `503` when none acknowledged it in 250 ms, so that orders stop while the store has no replica. Measured (`make bench-failover`, [BENCHMARKS.md](../BENCHMARKS.md), \"A failover mid-sale\"): the gate's two store calls of an order take 0.24 ms instead of 0.15 ms at the median (0.66 against 0.43 ms at p95) with the replica on the same host, plus the replica's network round trip in AWS, and the same 2 round trips. Refused at start without `REDIS_URL` (the embedded store has no replica), with `ORDER_GATE_FAIL_OPEN=true`, and on ElastiCache Serverless (`REDIS_IAM_USER` with `REDIS_IAM_SERVERLESS=true`: it offers no replica a client can wait for); a store that refuses `WAIT` fails every order with `503`, logged with a message naming this variable. `off`: the primary's acknowledgment is enough, and only the order API's deduplication by `X-Waitroom-Token-Id` keeps a token to one order across a failover (see `POST /orders`)"},
	{"ANONYMOUS_VISITORS", "local runner: `true`; functions: `false` (the stack: context `anonymousVisitors`)", "an enter with no identity creates a visitor and answers with a queue ticket"},
	{"TICKET_SECRET", "local runner: generated at start (logged: \"TICKET_SECRET unset: generated…\"; its tickets die with the process); functions: required when `ANONYMOUS_VISITORS=true` (the stack resolves it from the SSM String parameter `ticketSecretSsmParameter` at deploy time)", "HMAC key of queue tickets and of accounts' places (without it, accounts' polls ask the store: see \"An account's place\"): base64 (standard or URL-safe, padded or not) of at least 32 bytes, or `current,previous`. Never logged; errors never quote it"},
	{"TICKET_TTL_SECONDS", "`3600`", "life of a queue ticket, renewed by every enter/position answer while the visitor waits or holds a token (60 to 604800)"},
	{"TICKET_MAX_AGE_SECONDS", "`86400`", "no renewal carries a ticket past this long after the visitor's first ticket (60 to 2592000)"},
	{"CONTINUE_URL", "local runner: its demo checkout `/checkout?room={room}#entryToken={entryToken}`; AWS: the stack's `continueUrl`", "where the page's Continue button leads; `{entryToken}` and `{room}` are replaced (URL-encoded). An absolute http(s) URL or a path. Prefer the fragment (`#…`) for the token: it never reaches logs or `Referer`"},
	{"ORDER_FORWARD_HEADERS", "empty", "comma-separated header names the order gate passes on besides `Authorization`; `X-User-Id`, the `X-Waitroom-*` headers, `Idempotency-Key`, `Content-Type`, `Cookie`, `Host` and hop-by-hop headers are refused at start"},
	{"ADDR", "`127.0.0.1:8080`", "local runner's listen address (`host:port`)"},
	{"INSTANT_ADMIT", "`true`", "rooms' `instantAdmit` default: an enter that finds nobody waiting is admitted at once (\"Instant admission\")"},
	{"OPEN_ROOMS", "local runner: `true`; functions: `false`", "any valid room name works; `false`: only rooms an operator created (see \"Rooms\")"},
	{"ENTRY_TOKEN_KEYS", "local runner: generated at start (its tokens die with the process); functions: unset means opaque entry tokens (the stack resolves it from the SSM String parameter `entryTokenKeysSsmParameter` at deploy time)", "Ed25519 signing key of entry tokens: base64 of a 32-byte seed (`openssl rand -base64 32`), or `current,previous` during a rotation; both are published at `GET /.well-known/jwks.json`. Never logged; errors never quote it"},
	{"ENTRY_TOKEN_PUBLIC_KEYS", "unset (the stack gives it to the order gate alone, resolved from the SSM String parameter `entryTokenPublicKeysSsmParameter`)", "the public keys of `ENTRY_TOKEN_KEYS`' seeds, base64 (32 bytes each), in the same order: `current,previous` during a rotation (`go run ./cmd/entrytoken-keys` prints both values). A process with it and without `ENTRY_TOKEN_KEYS` verifies entry tokens and cannot sign one: the order gate's form. Enter, position and the local runner sign, so they refuse to start with it alone; setting both is refused too"},
	{"ENTRY_TOKEN_ISSUER", "`waitroom`", "the entry tokens' `iss` claim, which origins check (e.g. the waiting room's URL)"},
	{"CLIENT_RATE_PER_SEC", "`5`", "abuse limiter: requests per second one identity may make to enter, position, the event stream and orders, per room (0 to 1000000; 0 turns the per-identity bucket off)"},
	{"CLIENT_BURST", "`20`", "abuse limiter: the identity's bucket size (1 to 1000000000)"},
	{"IP_RATE_PER_SEC", "`500`", "abuse limiter: requests per second from one source IP, per room (0 to 1000000000; 0: off); far above the identity's, for many visitors behind one carrier NAT"},
	{"IP_BURST", "`2000`", "abuse limiter: the IP's bucket size (1 to 1000000000)"},
	{"VISITOR_RATE_PER_SEC", "`1`", "abuse limiter: new anonymous visitors one source address (an IPv6 /64) may make per second, per room (0 to 1000000; 0: off)"},
	{"VISITOR_BURST", "`10`", "abuse limiter: the new visitors' bucket size (1 to 1000000000)"},
	{"CHALLENGE", "`off`", "`off`, or `pow`: an enter that would make a new anonymous visitor must carry a solved proof-of-work challenge, else `428 challenge_required` (\"Proof of work\"). `pow` requires `ANONYMOUS_VISITORS=true`"},
	{"CHALLENGE_BITS", "`16`", "the challenge's difficulty: leading zero bits of SHA-256, about 2^bits hashes for the visitor's browser (1 to 24; [BENCHMARKS.md](../BENCHMARKS.md#proof-of-work-issue-19) has the measured solve times, [design.md](design.md#proof-of-work-for-new-visitors) the choice)"},
	{"STREAMS_PER_IP", "`10`", "local runner: event streams (`GET /queue/events`) open at once from one source address, the limiter's (an IPv6 address counts by its /64); then `429 rate_limited`. `0` turns this cap off. Behind a reverse proxy set `TRUSTED_PROXIES`, else every stream comes from the proxy's address (0 to 1000000)"},
	{"MAX_STREAMS", "`10000`", "local runner: event streams open at once in the process, each with its connection (a file descriptor) and memory ([design.md](design.md#live-updates-a-stream-locally-polling-in-aws)); then `429 rate_limited` (1 to 1000000)"},
	{"ADMIN_TOKEN", "unset (the local runner makes one up and prints it)", "bearer token of the admin API outside AWS IAM; 16 to 512 visible ASCII characters without spaces. Keep it secret: it is never logged ([security.md](security.md))"},
	{"PAGE_IMAGE_ORIGINS", "empty: no image origin", "comma-separated `https` origins (`https://host` or `https://host:port`) a room's `logoUrl` may name; the admin API refuses a logo elsewhere, and the local runner's page adds them to its Content-Security-Policy `img-src`. In AWS the stack sets it on the admin function from context `pageImageOrigins`, and CloudFront's CSP carries the same origins"},
	{"INTAKE", "`direct`", "`direct`, `broker` or `fallback` (see \"Intake through a broker\"); `broker` and `fallback` need `INTAKE_QUEUE_URL` and `TICKET_SECRET` (the local runner generates one)"},
	{"INTAKE_QUEUE_URL", "unset", "the SQS FIFO queue of accepted entries, `https://sqs.<region>.amazonaws.com/<account>/<name>.fifo`; a URL outside `amazonaws.com` names an SQS-compatible server (the local runner, tests) and is called without credentials"},
}

// RenderVariables is the Markdown table of Variables, as docs/API.md has it.
func RenderVariables() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n| --- | --- | --- |")
	for _, v := range Variables {
		fmt.Fprintf(&b, "\n| `%s` | %s | %s |", v.Name, v.Default, v.Meaning)
	}
	return b.String()
}
