// Package failover runs the waiting room through a store failover (issue
// 24): a primary with a replica behind a switching TCP proxy (the way a
// managed endpoint moves), and a 3-master cluster with a replica each,
// promoted while enters, polls, admission and orders go on through the
// real handlers (the local runner). Its visitors poll every ~100 ms; every
// other one is an account that sends X-User-Id and back the place its
// answers give (X-Queue-Place, as the page's wr_place cookie does), the
// rest are anonymous, as a browser is: no X-User-Id, the ticket each
// answer gives sent back as X-Queue-Ticket on every later enter, poll and
// order (as the wr_ticket cookie is). Its tests measure what a failover
// costs: acknowledged enters lost, by kind (told NOT_IN_QUEUE, sent to the
// back or never admitted), places put back at their holder's number
// (issue 36), duplicate sequence numbers, FIFO inversions, double
// admissions, orders per entry token, the time until every route answers
// normally again and what clients saw meanwhile.
//
// `make test` runs the short test (a few seconds, assertions on the
// invariants alone); `make bench-failover` runs every scenario into
// docs/bench/failover-results.json, which `make bench-report` renders
// into BENCHMARKS.md.
package failover
