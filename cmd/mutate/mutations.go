package main

import "strings"

// Mutation is one deliberate bug: the exact snippet From of File (it must
// occur exactly once) replaced by To, which some test of Pkgs must notice.
// Run and Skip narrow the tests as go test's -run and -skip do. Hint, a
// -run pattern, names the tests that caught the bug last time: they run
// first, and only when they pass does every test of Pkgs run, so a stale
// hint costs time, never a result.
type Mutation struct {
	Name string
	File string
	From string
	To   string
	Pkgs []string
	Run  string
	Skip string
	Hint string
}

// testSet names the tests a mutation runs, for the baseline.
func (m Mutation) testSet() string {
	return strings.Join(m.Pkgs, " ") + " -run " + m.Run + " -skip " + m.Skip
}

// The packages each kind of code is tested by. The scripts are exercised by
// the store's tests and, through the handlers, by awslambda's.
var (
	store    = []string{"./redisstore/", "./awslambda/"}
	handlers = []string{"./awslambda/"}
	domain   = []string{"."}
	iam      = []string{"./internal/elasticacheiam/"}
	sim      = []string{"./bench/spike/sim/"}
	streams  = []string{"./localrun/"}
	tokens   = []string{"./entrytoken/", "./awslambda/"}
)

// noBrowser leaves out the chromium tests: the streams' logic is tested
// without them, and they take most of localrun's minute.
const noBrowser = "Browser"

// mutations: the 44 kinds (ordered as the code paths they break),
// then the features that came after it. Keep each bug small and semantic:
// one a reviewer could plausibly let through.
var mutations = []Mutation{
	// admit.lua: who leaves the line, how many, with what.
	{Name: "admit.lua: ZPOPMAX instead of ZPOPMIN (LIFO)", File: "redisstore/admit.lua",
		From: "popped = redis.call('ZPOPMIN', KEYS[2], n)", To: "popped = redis.call('ZPOPMAX', KEYS[2], n)", Pkgs: store, Hint: `^TestAdmitIssuesTokensInOrder$`},
	{Name: "admit.lua: budget cap removed", File: "redisstore/admit.lua",
		From: "avail = math.min(burst + left - math.floor(left), left + elapsed * rate / 1000000)",
		To:   "avail = left + elapsed * rate / 1000000", Pkgs: store, Hint: `^TestBudgetCapIsTheScripts$`},
	{Name: "admit.lua: the carried fraction dropped from the cap", File: "redisstore/admit.lua",
		From: "avail = math.min(burst + left - math.floor(left), left + elapsed * rate / 1000000)",
		To:   "avail = math.min(burst, left + elapsed * rate / 1000000)", Pkgs: store, Hint: `^TestOneAdmitterKeepsSmallBatchRates$`},
	{Name: "admit.lua: a batch holds two batches", File: "redisstore/admit.lua",
		From: "local burst = math.max(1, rate * tonumber(ARGV[5]))", To: "local burst = math.max(1, 2 * rate * tonumber(ARGV[5]))", Pkgs: store, Hint: `^TestBudgetHoldsAtMostOneBatch$`},
	{Name: "admit.lua: budget refills at twice the rate", File: "redisstore/admit.lua",
		From: "left + elapsed * rate / 1000000)", To: "left + elapsed * rate / 500000)", Pkgs: store, Hint: `^TestOneAdmitterKeepsSmallBatchRates$`},
	{Name: "admit.lua: spent budget not written back", File: "redisstore/admit.lua",
		From: "avail = avail - admitted", To: "avail = avail", Pkgs: store, Hint: `^TestAdmitIssuesTokensInOrder$`},
	{Name: "admit.lua: no token record for the admitted", File: "redisstore/admit.lua",
		From: "  redis.call('SET', ARGV[6] .. user, string.format('%d:%d:', expiresAt, nowMs) .. token, 'PXAT', string.format('%d', expiresAt))\n",
		To:   "", Pkgs: store, Hint: `^TestAdmitIssuesTokensInOrder$`},
	{Name: "admit.lua: tokens never expire", File: "redisstore/admit.lua",
		From: "'PXAT', string.format('%d', expiresAt))", To: "'PXAT', string.format('%d', expiresAt + 86400000))", Pkgs: store, Hint: `^TestExpiredTokenIsGone$`},
	{Name: "admit.lua: admitted not counted as live tokens", File: "redisstore/admit.lua",
		From: "  redis.call('ZADD', KEYS[5], string.format('%d', expiresAt), user)\n", To: "", Pkgs: store, Hint: `^(TestMaxActiveNeverExceeded|TestCommitConsumesAndUnlocks)$`},
	{Name: "admit.lua: expired tokens not swept", File: "redisstore/admit.lua",
		From: "local expired = redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', nowMs)", To: "local expired = 0", Pkgs: store, Hint: `^TestEmptyRoomsAreForgottenAndComeBack$`},
	{Name: "admit.lua: waited always 0", File: "redisstore/admit.lua",
		From: "waited = math.max(0, nowSec - markSecond(mark[1]))", To: "waited = 0", Pkgs: store, Hint: `^TestAdmissionMeasuresTheWait$`},
	{Name: "admit.lua: token TTL doubled", File: "redisstore/admit.lua",
		From: "local expiresAt = nowMs + room.ttl", To: "local expiresAt = nowMs + 2 * room.ttl", Pkgs: store, Hint: `^(TestJourneyAndTokenRules|TestEmptyRoomsAreForgottenAndComeBack)$`},
	{Name: "admit.lua: idle rooms keep their keys forever", File: "redisstore/admit.lua",
		From: "if out[1] == 0 and out[2] == 0 then", To: "if false then", Pkgs: store, Hint: `^TestIdleRoomsLeaveNoKeys$`},
	{Name: "admit.lua: a pause does not stop admission", File: "redisstore/admit.lua",
		From: "if not room.paused and room.opensAt <= nowMs then", To: "if room.opensAt <= nowMs then", Pkgs: store, Hint: `^TestPauseStopsAdmissionAndResumeKeepsFIFO$`},
	{Name: "admit.lua: pre-queue admitted before the opening", File: "redisstore/admit.lua",
		From: "if not room.paused and room.opensAt <= nowMs then", To: "if not room.paused then", Pkgs: store, Hint: `^TestNoAdmissionBeforeTheOpening$`},
	{Name: "admit.lua: maxActive ignored", File: "redisstore/admit.lua",
		From: "n = math.min(n, room.maxActive - redis.call('ZCARD', KEYS[5]))", To: "n = n", Pkgs: store, Hint: `^TestMaxActiveNeverExceeded$`},
	{Name: "admit.lua: maxActive off by one", File: "redisstore/admit.lua",
		From: "n = math.min(n, room.maxActive - redis.call('ZCARD', KEYS[5]))", To: "n = math.min(n, room.maxActive + 1 - redis.call('ZCARD', KEYS[5]))", Pkgs: store, Hint: `^TestMaxActiveNeverExceeded$`},
	{Name: "admit.lua: per-second admissions not counted", File: "redisstore/admit.lua",
		From: "redis.call('HINCRBY', KEYS[8], nowSec, admitted)", To: "redis.call('HINCRBY', KEYS[8], nowSec, 0)", Pkgs: store, Hint: `^TestRoomStatus$`},

	// enter.lua and position.lua: places in line.
	{Name: "enter.lua: capacity off by one", File: "redisstore/enter.lua",
		From: "if waiting >= room.capacity then", To: "if waiting > room.capacity then", Pkgs: store, Hint: `^TestQueueFull$`},
	{Name: "enter.lua: an admitted user gets a new place", File: "redisstore/enter.lua",
		From: "local record = redis.call('GET', KEYS[4])", To: "local record = false", Pkgs: store, Hint: `^TestAdmitIssuesTokensInOrder$`},
	{Name: "enter.lua: re-entering loses the place", File: "redisstore/enter.lua",
		From: "local rank = redis.call('ZRANK', KEYS[2], ARGV[5])", To: "local rank = nil", Pkgs: store, Hint: `^TestEnterIsIdempotentAndExact$`},
	{Name: "enter.lua: sequence not incremented", File: "redisstore/enter.lua",
		From: "local seq = redis.call('INCR', KEYS[3])", To: "local seq = tonumber(redis.call('GET', KEYS[3]) or '0') + 1", Pkgs: store, Hint: `^(TestConcurrentEntersGapFree|TestWaitingAgainKeepsTheKeys)$`},
	{Name: "enter.lua: position off by one", File: "redisstore/enter.lua",
		From: "return answer('WAITING', waiting + 1, 1, room,", To: "return answer('WAITING', waiting, 1, room,", Pkgs: store, Hint: `^TestEnterIsIdempotentAndExact$`},
	{Name: "enter.lua: idle room's keys keep expiring", File: "redisstore/enter.lua",
		From: "  redis.call('PERSIST', KEYS[3])\n", To: "", Pkgs: store, Hint: `^(TestWaitingAgainKeepsTheKeys|TestPreQueueOpeningRaceLosesNobody)$`},
	{Name: "enter.lua: stall counted from the last batch only", File: "redisstore/enter.lua",
		From: "redis.call('HSET', KEYS[7], 'since', string.format('%d', nowUs))", To: "redis.call('HGET', KEYS[7], 'since')", Pkgs: store, Hint: `^TestStallCountsFromTheFirstWaiter$`},
	{Name: "position.lua: position off by one", File: "redisstore/position.lua",
		From: "local out = answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1,", To: "local out = answer('WAITING', rank, 0, room, stalled(room, rank + 1,", Pkgs: store, Hint: `^TestEnterIsIdempotentAndExact$`},
	{Name: "position.lua: an admitted user looks absent", File: "redisstore/position.lua",
		From: "local record = redis.call('GET', KEYS[3])", To: "local record = false", Pkgs: store, Hint: `^TestAdmitIssuesTokensInOrder$`},

	// The order gate: order_begin.lua, order_commit.lua, unlock.lua, store.go.
	{Name: "order_begin.lua: any token accepted", File: "redisstore/order_begin.lua",
		From: "if string.match(record, '[^:]*$') ~= ARGV[1] then", To: "if false then", Pkgs: store, Hint: `^TestJourneyAndTokenRules$`},
	{Name: "order_begin.lua: order lock dropped (no NX)", File: "redisstore/order_begin.lua",
		From: "'NX', 'PX', lockMs", To: "'PX', lockMs", Pkgs: store, Hint: `^TestConcurrentOrdersOneToken$`},
	{Name: "order_begin.lua: stored answers never replayed", File: "redisstore/order_begin.lua",
		From: "if ARGV[4] == '1' then", To: "if false then", Pkgs: store, Hint: `^(TestJourneyAndTokenRules|TestCommitConsumesAndUnlocks)$`},
	{Name: "order_commit.lua: token not consumed", File: "redisstore/order_commit.lua",
		From: "  redis.call('DEL', KEYS[1])\n", To: "", Pkgs: store, Hint: `^TestCommitConsumesAndUnlocks$`},
	{Name: "order_commit.lua: live token not freed", File: "redisstore/order_commit.lua",
		From: "  redis.call('ZREM', KEYS[4], ARGV[3])\n", To: "", Pkgs: store, Hint: `^TestCommitConsumesAndUnlocks$`},
	{Name: "order_commit.lua: answer not stored for replays", File: "redisstore/order_commit.lua",
		From: "redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[6])", To: "redis.call('GET', KEYS[3])", Pkgs: store, Hint: `^TestCommitConsumesAndUnlocks$`},
	{Name: "order_commit.lua: commit leaves the order lock", File: "redisstore/order_commit.lua",
		From: "if redis.call('GET', KEYS[2]) == ARGV[2] then\n  redis.call('DEL', KEYS[2])", To: "if redis.call('GET', KEYS[2]) == ARGV[2] then\n  redis.call('GET', KEYS[2])", Pkgs: store, Hint: `^(TestCommitConsumesAndUnlocks|TestOrderAgainAfterReadmission)$`},
	{Name: "unlock.lua: deletes the lock without checking its owner", File: "redisstore/unlock.lua",
		From: "if redis.call('GET', KEYS[1]) == ARGV[1] then", To: "if true then", Pkgs: store, Hint: `^TestReleaseFreesOnlyItsOwnLock$`},
	{Name: "store.go: idempotency record not scoped to the user", File: "redisstore/store.go",
		From: `return r.key("idem:" + strconv.Itoa(len(user)) + ":" + user + ":" + key)`, To: `return r.key("idem:" + key)`, Pkgs: store, Hint: `^TestIdempotencyKeyIsPerUser$`},
	{Name: "order_begin.lua: order lock shorter than the order", File: "redisstore/order_begin.lua",
		From: "local lockMs = math.max(tonumber(ARGV[3]), tokenLeftMs)", To: "local lockMs = 100", Pkgs: store, Hint: `^TestLockOutlivesTheOrder$`},

	// store.go: registration of rooms for admission (the cluster races).
	{Name: "store.go: every new enter costs 2 round trips", File: "redisstore/store.go",
		From: "if st.Joined && reply[1] == int64(1) {", To: "if st.Joined {", Pkgs: store, Hint: `^TestNewEnterIsOneRoundTrip$`},
	{Name: "store.go: first user's re-registration removed", File: "redisstore/store.go",
		From: "if st.Joined && reply[1] == int64(1) {", To: "if false {", Pkgs: store, Hint: `^TestFirstEnterRegistersAgain$`},
	{Name: "store.go: forgetRoom's re-check removed", File: "redisstore/store.go",
		From: "if n, err := s.rdb.Exists(ctx, k.line(), k.tokens()).Result(); err != nil || n > 0 {", To: "if n, err := s.rdb.Exists(ctx, k.line(), k.tokens()).Result(); false && (err != nil || n > 0) {", Pkgs: store, Hint: `^TestForgetRoomRechecksTheLine$`},
	{Name: "store.go: rooms with someone in them forgotten", File: "redisstore/store.go",
		From: "if !stored && rb.Waiting == 0 && len(rb.Admitted) == 0 && rb.ActiveTokens == 0 {", To: "if !stored && len(rb.Admitted) == 0 {", Pkgs: store, Hint: `^TestRoundTripsPerOperation$`},
	{Name: "store.go: OPEN_ROOMS enter does not register the room", File: "redisstore/store.go",
		From: "\t\tif s.openRooms {\n\t\t\tp.SAdd(ctx, roomsKey, room)", To: "\t\tif false {\n\t\t\tp.SAdd(ctx, roomsKey, room)", Pkgs: store, Hint: `^TestEnterHealsALostRegistration$`},

	// awslambda: the handlers' deliberate answers.
	{Name: "api.go: foreign store errors no longer mapped to 503", File: "awslambda/api.go",
		From: "if err != nil && waitroom.ErrorCode(err) == waitroom.EInternal {", To: "if false {", Pkgs: handlers, Hint: `^TestForeignStoreErrorsAre503$`},
	{Name: "api.go: a store failure at commit becomes a 500", File: "awslambda/api.go",
		From: "\t\ta.commit(ctx, lease, answer)\n\t\treturn answerResponse(answer)",
		To:   "\t\tif err := a.Queue.CommitOrder(ctx, lease, answer); err != nil {\n\t\t\treturn errorResponse(errors.New(\"commit\"))\n\t\t}\n\t\treturn answerResponse(answer)", Pkgs: handlers, Hint: `^TestCommitFailureKeepsTheOrdersAnswer$`},
	{Name: "api.go: the panic guard removed", File: "awslambda/api.go",
		From: "if p := recover(); p != nil {", To: "if p := any(nil); p != nil {", Pkgs: handlers, Hint: `^TestPanicIsA500$`},
	{Name: "api.go: poll jitter removed", File: "awslambda/api.go",
		From: "\tif a.Rand != nil {\n\t\treturn a.Rand()\n\t}\n\treturn rand.Float64()", To: "\t_ = rand.Float64\n\treturn 0.5", Pkgs: handlers, Hint: `^TestPollJitter$`},
	{Name: "api.go: StoreUnavailable metric not emitted", File: "awslambda/api.go",
		From: "\t\ta.Metrics.Record(room, metrics.Of(metrics.StoreUnavailable, metrics.Count, 1))\n", To: "", Pkgs: handlers, Hint: `^TestHandlerMetrics$`},
	{Name: "api.go: TokensRejected not emitted for a malformed token", File: "awslambda/api.go",
		From: "\t\t\ta.Metrics.Record(\"\", metrics.Of(metrics.TokensRejected, metrics.Count, 1))\n", To: "", Pkgs: handlers, Hint: `^TestHandlerMetrics$`},
	{Name: "api.go: TokensRejected not emitted for a refused token", File: "awslambda/api.go",
		From: "\t\t\ta.Metrics.Record(room, metrics.Of(metrics.TokensRejected, metrics.Count, 1))\n", To: "", Pkgs: handlers, Hint: `^TestHandlerMetrics$`},
	{Name: "api.go: lock kept after a failed order", File: "awslambda/api.go",
		From: "\t\t\ta.release(ctx, lease)\n", To: "", Pkgs: handlers, Hint: `^TestUpstreamFailuresKeepTheToken$`},
	{Name: "api.go: a downstream 4xx consumes the token", File: "awslambda/api.go",
		From: "if err != nil || answer.Status < 200 || answer.Status > 299 {", To: "if err != nil || answer.Status < 200 || answer.Status > 499 {", Pkgs: handlers, Hint: `^TestJourneyAndTokenRules$`},
	{Name: "api.go: stalled admission polled at the turn", File: "awslambda/api.go",
		From: "if st.Paused || st.Stalled {", To: "if st.Paused {", Pkgs: handlers, Hint: `^TestStalledAdmissionBacksOff$`},
	{Name: "identity.go: empty JWT sub taken as the user", File: "awslambda/identity.go",
		From: `auth.JWT != nil && auth.JWT.Claims["sub"] != ""`, To: `auth.JWT != nil`, Pkgs: handlers, Hint: `^TestIdentitySources$`},
	{Name: "identity.go: untrusted X-User-Id believed", File: "awslambda/identity.go",
		From: "if !a.Config.TrustUserHeader {\n\t\treturn Identity{}, false, nil", To: "if false {\n\t\treturn Identity{}, false, nil", Pkgs: handlers, Hint: `^TestIdentitySources$`},
	{Name: "identity.go: one namespace for every source", File: "awslambda/identity.go",
		From: `FromAuthorizer: "a:", FromHeader: "h:"`, To: `FromAuthorizer: "", FromHeader: ""`, Pkgs: handlers, Hint: `^(TestHeaderCannotClaimAVisitor|TestIdentityOrder)$`},
	{Name: "intake.go: a receipt stands in for another identity", File: "awslambda/intake.go",
		From: "case err == nil && who.User != e.User:", To: "case false:", Pkgs: handlers, Hint: `^TestReceiptNeverOverridesAnIdentity$`},
	{Name: "errors.go: queue_full is 503, not 429", File: "awslambda/errors.go",
		From: "waitroom.EQueueFull:        http.StatusTooManyRequests,", To: "waitroom.EQueueFull:        http.StatusServiceUnavailable,", Pkgs: handlers, Hint: `^TestQueueFullAnswer$`},
	{Name: "errors.go: Retry-After dropped", File: "awslambda/errors.go",
		From: "if e.RetryAfter > 0 {", To: "if false {", Pkgs: handlers, Hint: `^TestQueueFullAnswer$`},
	{Name: "lambda.go: the admit function's deadline margin removed", File: "awslambda/lambda.go",
		From: "ctx, cancel = context.WithDeadline(ctx, dl.Add(-deadlineMargin))", To: "ctx, cancel = context.WithDeadline(ctx, dl)", Pkgs: handlers, Hint: `^TestAdmitFunctionStopsBeforeTheDeadline$`},

	// Features after the issue: proxy secret, admin API, tickets, settings,
	// pause, maxActive, pre-queue, OPEN_ROOMS, idle admit, IAM signing.
	{Name: "identity.go: any X-Proxy-Secret accepted", File: "awslambda/identity.go",
		From: "if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || !ok {", To: "if subtle.ConstantTimeCompare(got[:], want[:]) < 0 || !ok {", Pkgs: handlers, Hint: `^TestProxySecretGuardsTheUserHeader$`},
	{Name: "identity.go: a missing X-Proxy-Secret accepted when it hashes alike", File: "awslambda/identity.go",
		From: "if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || !ok {", To: "if subtle.ConstantTimeCompare(got[:], want[:]) != 1 && !ok {", Pkgs: handlers, Hint: `^TestProxySecretGuardsTheUserHeader$`},
	{Name: "config.go: X-User-Id believed without a secret off loopback", File: "config.go",
		From: "!(d.LoopbackTrust && loopbackOnly(c.Addr))", To: "!d.LoopbackTrust", Pkgs: domain, Hint: `^TestUserHeaderNeedsASecretOrLoopback$`},
	{Name: "admin.go: any bearer token is the admin", File: "awslambda/admin.go",
		From: "return adminTokenWho, subtle.ConstantTimeCompare(got[:], want[:]) == 1", To: "return adminTokenWho, subtle.ConstantTimeCompare(got[:], want[:]) >= 0", Pkgs: handlers, Hint: `^TestAdminAuthentication$`},
	{Name: "admin.go: IAM principal trusted without TrustIAM", File: "awslambda/admin.go",
		From: "a.TrustIAM && auth != nil && auth.IAM != nil", To: "auth != nil && auth.IAM != nil", Pkgs: handlers, Hint: `^TestAdminAuthentication$`},
	{Name: "ticket.go: signature not checked", File: "ticket.go",
		From: "if err != nil || !hmac.Equal(got, mac(key.Secret, domain, ticket[:len(ticket)-len(parts[4])-1])) {", To: "if err != nil || !hmac.Equal(got, got) {", Pkgs: domain, Hint: `^(TestTicketEveryByteFlipped|TestTicketSignVerify)$`},
	{Name: "ticket.go: expired tickets accepted", File: "ticket.go",
		From: "if err != nil || ierr != nil || !now.Before(time.Unix(exp, 0)) {", To: "if err != nil || ierr != nil || !now.Before(time.Unix(exp, 0).AddDate(100, 0, 0)) {", Pkgs: domain, Hint: `^TestTicketExpiry$`},
	{Name: "visitor.go: tickets renewed past their maximum age", File: "awslambda/visitor.go",
		From: "if last := issued.Add(a.ticketMaxAge()); last.Before(exp) {", To: "if last := issued.Add(a.ticketMaxAge()); false && last.Before(exp) {", Pkgs: handlers, Hint: `^TestTicketsAreNotRenewedForever$`},
	{Name: "visitor.go: NOT_IN_QUEUE renews the ticket", File: "awslambda/visitor.go",
		From: "if !who.Ticketed() || status == waitroom.NotInQueue {", To: "if !who.Ticketed() {", Pkgs: handlers, Hint: `^TestTicketsAreNotRenewedForever$`},
	{Name: "settings.go: an opening in year 9999 accepted", File: "settings.go",
		From: "|| s.OpensAt.After(now.Add(opensAtFuture))", To: "|| false", Pkgs: handlers, Hint: `^TestOpensAtWithinReason$`},
	{Name: "httpadapter.go: a large body read before routing", File: "awslambda/httpadapter.go",
		From: "if r.ContentLength > MaxRequestBody {", To: "if false {", Pkgs: streams, Hint: `^TestLargeBodiesRefusedBeforeRouting$`},
	{Name: "ticket.go: previous key no longer verifies", File: "ticket.go",
		From: "for _, key := range []*TicketKey{k.Current, k.Previous} {", To: "for _, key := range []*TicketKey{k.Current} {", Pkgs: domain, Hint: `^TestTicketRotation$`},
	{Name: "room.lua: stored rate ignored", File: "redisstore/room.lua",
		From: "return {stored = true, open = true, rate = tonumber(s[1]),", To: "return {stored = true, open = true, rate = tonumber(ARGV[1]),", Pkgs: store, Hint: `^TestRateChangeNeverOverAdmits$`},
	{Name: "room.lua: stored capacity ignored", File: "redisstore/room.lua",
		From: "capacity = tonumber(s[2]), ttl = tonumber(s[3]),", To: "capacity = tonumber(ARGV[2]), ttl = tonumber(s[3]),", Pkgs: store, Hint: `^TestStoredCapacityHolds$`},
	{Name: "room.lua: OPEN_ROOMS off still opens every room", File: "redisstore/room.lua",
		From: "open = ARGV[4] == '1',", To: "open = true,", Pkgs: store, Hint: `^TestClosedRoomsCreateNothing$`},
	{Name: "room.lua: pause not told to the visitor", File: "redisstore/room.lua",
		From: "room.rateText, room.paused and 1 or 0, room.opensAtText", To: "room.rateText, 0, room.opensAtText", Pkgs: store, Hint: `^(TestPauseStopsAdmissionAndResumeKeepsFIFO|TestAdminSteersASale)$`},
	{Name: "room.lua: a stall is never seen", File: "redisstore/room.lua",
		From: "if last > 0 and nowUs - last > stallUs then", To: "if false then", Pkgs: store, Hint: `^TestStallCountsFromTheFirstWaiter$`},
	{Name: "room.lua: a full maxActive is not a stall", File: "redisstore/room.lua",
		From: "if room.maxActive > 0 and redis.call('ZCARD', tokensKey) >= room.maxActive then", To: "if false then", Pkgs: store, Hint: `^(TestStalledAdmissionBacksOff|TestMaxActiveNeverExceeded)$`},
	{Name: "settings_set.lua: no compare-and-set on the version", File: "redisstore/settings_set.lua",
		From: "if v ~= ARGV[1] then", To: "if false then", Pkgs: store, Hint: `^TestConcurrentSettingsChangesBothLand$`},
	{Name: "settings.go: capacity 0 accepted", File: "settings.go",
		From: "case s.Capacity < 1 || s.Capacity > maxCapacity:", To: "case s.Capacity < 0 || s.Capacity > maxCapacity:", Pkgs: []string{".", "./awslambda/"}, Hint: `^TestAdminValidation$`},
	{Name: "enter.lua: pre-queue place not drawn", File: "redisstore/enter.lua",
		From: "string.format('%.17g', base + tonumber(ARGV[6])), ARGV[5])", To: "string.format('%.17g', base + 0.5), ARGV[5])", Pkgs: store, Hint: `^TestPreQueueDrawIsUniform$`},
	{Name: "enter.lua: no pre-queue before the opening", File: "redisstore/enter.lua",
		From: "local prequeue = room.opensAt > nowMs", To: "local prequeue = false", Pkgs: store, Hint: `^TestPreQueue`},
	{Name: "position.lua: a pre-queued visitor told a position", File: "redisstore/position.lua",
		From: "  if room.opensAt > math.floor(nowUs / 1000) then\n    return answer('PREQUEUE', 0, 0, room)\n  end\n", To: "", Pkgs: store, Hint: `^TestPreQueue`},
	{Name: "status.lua: pre-queued not counted", File: "redisstore/status.lua",
		From: "prequeued = redis.call('ZCOUNT', KEYS[2], '(' .. base, '+inf')", To: "prequeued = 0", Pkgs: store, Hint: `^TestRoomStatus$`},
	{Name: "settings.go: a pre-queue polls the far tier", File: "settings.go",
		From: "ms := max(0, untilOpen.Milliseconds()) + c.AdmitInterval.Milliseconds() + int64(spread)", To: "ms := int64(t[0].PollMs) + 0*int64(spread)", Pkgs: []string{".", "./awslambda/"}},
	{Name: "estimate.go: poll not capped at the turn", File: "estimate.go",
		From: "return min(tier, int64(math.Round(turn)))", To: "return max(tier, int64(math.Round(turn)))", Pkgs: domain, Hint: `^(TestPollAfterNeverPastTheTurn|TestFarHorizonAnswersTheFarTier)$`},
	{Name: "estimate.go: POLL_TIERS without a 0 tier accepted", File: "estimate.go",
		From: "if tiers[len(tiers)-1].MinWaitSeconds != 0 {", To: "if false {", Pkgs: domain, Hint: `^TestPollTiersVariable$`},
	{Name: "admitter.go: an idle invocation keeps running", File: "admitter.go",
		From: "if sum.Batches == 1 && batch.Idle() {", To: "if false {", Pkgs: []string{".", "./awslambda/"}, Hint: `^TestAdmitterIdleStopsAfterOneBatch$`},
	{Name: "waitroom.go: live tokens do not keep admission awake", File: "waitroom.go",
		From: "if r.Waiting > 0 || r.ActiveTokens > 0 || len(r.Admitted) > 0 {", To: "if r.Waiting > 0 || len(r.Admitted) > 0 {", Pkgs: []string{".", "./awslambda/"}, Hint: `^TestAdmitIdleInvocations$`},
	{Name: "elasticacheiam: token lifetime not signed", File: "internal/elasticacheiam/elasticacheiam.go",
		From: `"X-Amz-Expires": {strconv.Itoa(int(TokenLifetime / time.Second))}`, To: `"X-Amz-Expires": {strconv.Itoa(int(TokenLifetime/time.Second) + 1)}`, Pkgs: iam, Hint: `^TestTokenKnownAnswer$`},
	{Name: "elasticacheiam: serverless resource type dropped", File: "internal/elasticacheiam/elasticacheiam.go",
		From: "q.Set(\"ResourceType\", \"ServerlessCache\")", To: "q.Del(\"ResourceType\")", Pkgs: iam, Hint: `^TestTokenKnownAnswer$`},
	{Name: "elasticacheiam: a token outlives its session credentials", File: "internal/elasticacheiam/elasticacheiam.go",
		From: "if creds.CanExpire && creds.Expires.Before(p.validUntil) {", To: "if false {", Pkgs: iam, Hint: `^TestProviderResignsWhenCredentialsExpire$`},
	{Name: "elasticacheiam: every call signs anew", File: "internal/elasticacheiam/elasticacheiam.go",
		From: "if p.token != \"\" && now.Before(p.validUntil) && !now.Before(p.signedAt) {", To: "if false {", Pkgs: iam, Hint: `^TestProviderReusesTokenThenResigns$`},
	{Name: "localrun/events.go: stream position off by one", File: "localrun/events.go",
		From: "Position: seq - f.seq + 1}", To: "Position: seq - f.seq}", Pkgs: streams, Hint: `^TestStreamPositionIsTheStores$`, Skip: noBrowser},
	{Name: "localrun/events.go: admission not noticed by the stream", File: "localrun/events.go",
		From: "if f.empty || f.seq > seq {", To: "if f.empty {", Pkgs: streams, Hint: `^TestStream`, Skip: noBrowser},
	// Issue 12 (w-trust): signed entry tokens, single use by jti, the
	// idempotency body hash and its 422, the limiter, commit durability.
	{Name: "entrytoken: signature not checked", File: "entrytoken/entrytoken.go",
		From: "if !ed25519.Verify(pub, []byte(parts[0]+\".\"+parts[1]), sig) {", To: "if !ed25519.Verify(pub, []byte(parts[0]+\".\"+parts[1]), sig) && false {", Pkgs: tokens, Hint: `^(TestSignVerifyAndRefuse|TestSignedEntryTokens)$`},
	{Name: "entrytoken: expired tokens accepted", File: "entrytoken/entrytoken.go",
		From: "if !now.Before(c.Expires().Add(leeway)) {", To: "if !now.Before(c.Expires().Add(leeway).AddDate(1, 0, 0)) {", Pkgs: tokens, Hint: `^(TestSignVerifyAndRefuse|TestSignedEntryTokens)$`},
	{Name: "entrytoken: another issuer's token accepted", File: "entrytoken/keys.go",
		From: "if c.Issuer != k.Issuer {", To: "if false {", Pkgs: tokens, Hint: `^TestKeysVerifyChecksTheIssuer$`},
	{Name: "api.go: a token of another room orders (ORDER_ROOMS ignored)", File: "awslambda/api.go",
		From: "if err == nil && len(a.Config.OrderRooms) > 0 && !slices.Contains(a.Config.OrderRooms, room) {", To: "if false {", Pkgs: streams, Hint: `^TestOrdersAreBoundToTheirRoom$`},
	{Name: "client.go: the order API never learns the room", File: "orderapi/client.go",
		From: `"X-Waitroom-Room": r.Room,`, To: `"X-Waitroom-Room": "",`, Pkgs: streams, Hint: `^TestOrdersAreBoundToTheirRoom$`},
	{Name: "entrytoken.go: another user's signed token accepted", File: "awslambda/entrytoken.go",
		From: "if err != nil || c.Subject != who.ID || c.Source != who.tokenSource() {", To: "if err != nil {", Pkgs: handlers, Hint: `^TestForgedTokenCostsNoStoreCall$`},
	{Name: "order_commit.lua: a jti usable twice (commit consumes nothing)", File: "redisstore/order_commit.lua",
		From: "if record and string.match(record, '[^:]*$') == ARGV[1] then", To: "if false then", Pkgs: store, Hint: `^(TestSignedEntryTokens|TestCommitConsumesAndUnlocks)$`},
	{Name: "store.go: Idempotency-Key replayed for another body", File: "redisstore/store.go",
		From: "if answer.RequestHash != \"\" && answer.RequestHash != o.RequestHash {", To: "if false {", Pkgs: store, Hint: `^TestIdempotencyKeyReusedWithAnotherBody$`},
	{Name: "store.go: the body hash not stored with the answer", File: "redisstore/store.go",
		From: "\tanswer.RequestHash = l.RequestHash\n", To: "", Pkgs: store, Hint: `^TestIdempotencyKeyReusedWithAnotherBody$`},
	{Name: "errors.go: idempotency_key_reused is 409, not 422", File: "awslambda/errors.go",
		From: "waitroom.EIdemKeyReused:    http.StatusUnprocessableEntity,", To: "waitroom.EIdemKeyReused:    http.StatusConflict,", Pkgs: handlers, Hint: `^TestIdempotencyKeyReusedWithAnotherBody$`},
	{Name: "errors.go: rate_limited is 503, not 429", File: "awslambda/errors.go",
		From: "waitroom.ERateLimited:      http.StatusTooManyRequests,", To: "waitroom.ERateLimited:      http.StatusServiceUnavailable,", Pkgs: handlers, Hint: `^TestRateLimitedAnswers$`},
	{Name: "ratelimit.lua: an empty bucket still allows", File: "redisstore/ratelimit.lua",
		From: "      if ahead > 0 then", To: "      if false then", Pkgs: store, Hint: `^(TestLimiterIsSharedAcrossProcesses|TestRateLimitedAnswers)$`},
	{Name: "ratelimit.lua: a request takes nothing from the bucket", File: "redisstore/ratelimit.lua",
		From: "local tat = math.max(tonumber(held[i]) or 0, nowUs) + step", To: "local tat = math.max(tonumber(held[i]) or 0, nowUs)", Pkgs: store, Hint: `^(TestLimiterIsSharedAcrossProcesses|TestRateLimitedAnswers)$`},
	{Name: "ratelimit.lua: the IP's bucket ignored", File: "redisstore/ratelimit.lua",
		From: "local rates = {tonumber(ARGV[a]) or 0, tonumber(ARGV[a + 2]) or 0, tonumber(ARGV[a + 4]) or 0}", To: "local rates = {tonumber(ARGV[a]) or 0, 0, tonumber(ARGV[a + 4]) or 0}", Pkgs: store, Hint: `^TestLimiterPerIP$`},
	{Name: "ratelimit.lua: new visitors not limited", File: "redisstore/ratelimit.lua",
		From: "local rates = {tonumber(ARGV[a]) or 0, tonumber(ARGV[a + 2]) or 0, tonumber(ARGV[a + 4]) or 0}", To: "local rates = {tonumber(ARGV[a]) or 0, tonumber(ARGV[a + 2]) or 0, 0}", Pkgs: store, Hint: `^TestOneClientCannotMintACrowd$`},
	{Name: "ratelimit.go: IPv6 addresses counted one by one", File: "caller.go",
		From: "	return netip.PrefixFrom(a, 64).Masked().String()", To: "	return a.String()", Pkgs: handlers, Hint: `^TestOneClientCannotMintACrowd$`},
	{Name: "accept.lua: the broker's accept not limited", File: "redisstore/accept.lua",
		From: "local limitWait = rateLimit(2, 5)", To: "local limitWait = 0", Pkgs: handlers, Hint: `^TestBrokerAcceptIsLimited$`},
	{Name: "accept.lua: the broker takes rooms nobody made", File: "redisstore/accept.lua",
		From: "if not room.open then\n  return {'NOROOM'}", To: "if false then\n  return {'NOROOM'}", Pkgs: handlers, Hint: `^TestBrokerRefusesUnknownRooms$`},
	{Name: "order_begin.lua: the gate not limited", File: "redisstore/order_begin.lua",
		From: "local limitWait = rateLimit(4, 5, nowUs)", To: "local limitWait = 0", Pkgs: store, Hint: `^TestRateLimitedAnswers$`},
	{Name: "enter.lua: enter not limited", File: "redisstore/enter.lua",
		From: "local limitWait = rateLimit(9, 9, nowUs)", To: "local limitWait = 0", Pkgs: store, Hint: `^(TestRateLimitedAnswers|TestLimiterIsSharedAcrossProcesses|TestLimiterPerIP)$`},
	{Name: "order_begin.lua: the lock only as long as the order, not the token", File: "redisstore/order_begin.lua",
		From: "local lockMs = math.max(tonumber(ARGV[3]), tokenLeftMs)", To: "local lockMs = tonumber(ARGV[3])", Pkgs: store, Hint: `^TestUncommittedOrderKeepsTheTokenLockedOnRedisServer$`},
	{Name: "retry.go: the commit not retried (one store call)", File: "awslambda/retry.go",
		From: "if err == nil || time.Until(deadline) < backoff {", To: "if true {", Pkgs: handlers, Hint: `^TestCommitOutlivesABriefStoreFreezeOnRedisServer$`},
	{Name: "api.go: fail-open orders not counted", File: "awslambda/api.go",
		From: "\t\t\ta.Metrics.Record(room, metrics.Of(metrics.OrdersFailOpen, metrics.Count, 1))\n", To: "", Pkgs: handlers, Hint: `^TestFailOpenIsLoggedAndCounted$`},
	{Name: "store.go: position no longer re-registers an open room", File: "redisstore/store.go",
		From: "\t\tres = positionScript.EvalSha(ctx, p, keys, args...)\n\t\tp.SAdd(ctx, roomsKey, room)", To: "\t\tres = positionScript.EvalSha(ctx, p, keys, args...)", Pkgs: store, Hint: `^TestPositionReregistersAWaitingRoom$`},

	// The intake (w-integ2): entries applied once, stale ones dropped.
	{Name: "apply_head.lua: a redelivered entry applied again", File: "redisstore/apply_head.lua",
		From: "if last and tonumber(string.match(last, '^%d+')) >= accepted then", To: "if false then", Pkgs: []string{"./redisstore/", "./intake/"}, Hint: `^TestApplyIsOnceInEffect$`},
	{Name: "apply_tail.lua: a full line's entry not recorded as FULL", File: "redisstore/apply_tail.lua",
		From: "if reply[1] == 'FULL' then\n  record = record .. ':FULL'", To: "if false then\n  record = record .. ':FULL'", Pkgs: []string{"./redisstore/", "./intake/"}, Hint: `^(TestApplyMatchesEnter|TestApplyIsOnceInEffect)$`},
	{Name: "apply_tail.lua: a record for a room nobody made", File: "redisstore/apply_tail.lua",
		From: "if reply[1] == 'NOROOM' then\n  -- A room nobody made gets no key at all; position refuses it by itself.\n  return reply", To: "if false then\n  return reply", Pkgs: []string{"./redisstore/", "./awslambda/"}, Hint: `^(TestApplyToAnUnknownRoom|TestBrokerRefusesUnknownRooms)$`},
	{Name: "intake.go: entries older than their receipt applied", File: "intake/intake.go",
		From: "if c.now().Sub(e.AcceptedAt) >= c.keep() {", To: "if false {", Pkgs: []string{"./intake/"}, Hint: `^TestConsumerDropsEntriesOlderThanTheirReceipt$`},

	{Name: "sim: the midnight arrival curve made flat", File: "bench/spike/sim/scenario.go",
		From: "inv = func(q float64) float64 { return -math.Log(1-q*(1-math.Exp(-k))) / k }", To: "inv = func(q float64) float64 { _ = k; return q }", Pkgs: sim, Hint: `^TestArrivalCurveShapes$`},
}
