package sim

import (
	"path/filepath"
	"strings"
	"testing"
)

func fakeBigRoom() *BigRoomResults {
	return &BigRoomResults{When: "2026-12-05T12:00:00Z", Room: "one room", Visitors: 1_000_001,
		Fill: BigRoomFill{Accounts: 500_001, Anonymous: 500_000, AccountExample: "a:" + strings.Repeat("0", 36), AnonymousExample: "v-" + strings.Repeat("x", 22),
			Method: "by appendLine", CheckUsers: 1000, Same: []string{"a:<5 hex> b"}, ByPresence: []string{"settings born"}},
		Memory: BigRoomMemory{Visitors: 1_000_000, Accounts: 500_000, Anonymous: 500_000, Before: 2_000_000, AfterAccounts: 92_000_000, AfterFill: 92_000_500,
			AfterReload: 82_000_000, Buckets: 262_144, Listpacks: 262_143, BucketBytes: 70_000_140, Layout: "accounts keep records"},
		Ops: []BigRoomOp{{Key: "enterAccount", Name: "enter, a new account", Limiter: "on", Calls: 100, Instructions: 15_000_000},
			{Key: "claimAccount", Name: "claim, an account", Limiter: "on", Calls: 100, Instructions: 4_000_000},
			{Key: "admitBatch", Name: "admission batch", Calls: 10, Instructions: 7_000_000, Admitted: 10}},
		Wait:              BigRoomWait{RatePerSec: 1000, LastPosition: 1_000_001, ComputedSeconds: 1000.001, WindowSeconds: 10, WindowBatches: 110, WindowAdmitted: 9_600, MeasuredRatePerSec: 950, MeasuredSeconds: 1052.6},
		PollStoreCommands: BigRoomFigure{Note: "not measured: x is absent"}, FunctionCallsPerVisitor: BigRoomFigure{Measured: true, Value: 3, Source: "p.json: wait30min.functionCalls"}}
}

func TestBigRoomSectionRendersFromItsResults(t *testing.T) {
	in := fakeInputs()
	in.BigRoom = fakeBigRoom()
	dir := t.TempDir()
	f := Files{Spike: filepath.Join(dir, "r", "spike.json"), BigRoom: filepath.Join(dir, "r", "big.json"), Markdown: filepath.Join(dir, "B.md"), Plots: filepath.Join(dir, "r")}
	md, err := WriteReport(in, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## One room, 1,000,001 visitors (issue 36)",
		"<!-- begin bigroom: rendered from r/big.json (make bench-bigroom); do not edit -->",
		"500,001 accounts", "38 bytes", "24 bytes",
		"The fill writes the layout `enter.lua` writes", "alike (a:<5 hex> b), those holding times by presence (settings born: the two rooms",
		"| memory per account at 1,000,001 | **160.0 B**", // (82,000,000 − 2,000,000) ÷ 500,000
		"180.0 B right after their records were written; `MEMORY USAGE` of the accounts' 262,144 buckets (262,143 of them listpacks) 140.0 B an account |", // 70,000,140 ÷ 500,001
		"| memory per anonymous visitor at 1,000,001 | **0.00 B**", // 500 ÷ 500,000
		"; 80.0 B a visitor of either kind after the reload |",
		"| what each kind keeps | accounts keep records (ids of 38 and 24 bytes here) |",
		"| enter, a new account, limiter on | **150,000** instructions per call (100 calls) |",
		"| admission batch | **700,000** instructions per call (10 calls) |",
		"| the last visitor's wait at 1,000 admissions/s | **0:16:40** (1,000,001 / 1,000 = 1,000 s); measured: the functions' admitter at that rate on the filled server admitted 950.0/s over 10.0 s (110 batches, 9600 admitted), which gives the last visitor 0:17:33 |",
		"| store commands per waiting poll through HTTP | not measured: x is absent |",
		"| function calls per visitor through the page | **3.0** (`p.json: wait30min.functionCalls`) |",
		"<!-- end bigroom -->",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	in.BigRoom.Fill.Differ = []string{"a:<5 hex> b"}
	if md, err = WriteReport(in, f); err != nil || !strings.Contains(md, "**The fill does not write what `enter.lua` writes**") {
		t.Errorf("a difference found by the check must be said (%v)", err)
	}
	if h := fakeBigRoom().Headline(); h.BytesPerVisitor != 80 || h.BytesPerAccount != 160 || h.BytesPerAnonymous != 0.001 || h.EnterAccount != 150_000 || h.AdmitBatch != 700_000 || h.ClaimAccount != 40_000 || h.Claim != 0 || h.PollStoreCommands != nil || *h.FunctionCallsPerUser != 3 {
		t.Errorf("headline: %+v", h)
	}
}
