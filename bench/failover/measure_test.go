package failover

import (
	"testing"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// measure turns what the visitors were told into the scenario's figures.
func (sc scenario) measure(vs []*visitor, w *world, seqs *lineSampler) sim.FailoverScenario {
	res := sc.describe()
	for _, v := range vs {
		acked, lost := &res.AccountsAcked, &res.AccountsLost
		if v.anon {
			acked, lost = &res.AnonymousAcked, &res.AnonymousLost
		}
		if v.acked {
			res.EntersAcked++
			*acked++
		}
		if v.lost != "" {
			res.EntersLost++
			*lost++
		}
		if !v.anon && seqs.restored[v.storeUser()] {
			res.PlacesRestored++
		}
		if len(v.tokens) > 1 {
			res.DoubleAdmissions++
		}
		if v.unordered() != "" {
			res.Unordered++
		}
		res.AdmissionsTakenBack += v.takenBack
	}
	res.FIFOPairs, res.FIFOInversions = inversions(vs)
	res.DuplicateSeqs = seqs.duplicates()
	res.RecoverySeconds = w.obs.recovery().Seconds()
	res.Answers = w.obs.counts()
	res.WrongAnswers = w.obs.wrongCount
	return res
}

// inversions compares every pair of visitors of whom one's enter was
// acknowledged before the other's was sent: an inversion is the earlier
// one admitted (its last admission) strictly after the later one.
func inversions(vs []*visitor) (pairs, inverted int) {
	for _, a := range vs {
		for _, b := range vs {
			if a == b || !a.acked || !b.acked || a.issued == 0 || b.issued == 0 || !a.ackedAt.Before(b.sentAt) {
				continue
			}
			pairs++
			if a.issued > b.issued {
				inverted++
			}
		}
	}
	return pairs, inverted
}

// describe is the scenario's own part of its figures.
func (sc scenario) describe() sim.FailoverScenario {
	res := sim.FailoverScenario{Key: sc.Key, Name: sc.Name, Topology: "primary and replica", DurableWrites: string(sc.Durable),
		OrderDedup: sc.Dedup, OrderRecord: sc.Record, LagMs: float64(sc.Lag.Milliseconds()), Frozen: sc.Freeze, Visitors: sc.Visitors, RatePerSec: sc.Rate,
		Failover: "REPLICAOF NO ONE on the replica, the endpoint (a TCP proxy) switched to it, its connections dropped"}
	if sc.Cluster {
		res.Topology = "cluster (3 masters, 1 replica each)"
		res.Failover = "CLUSTER FAILOVER FORCE on the replica of the room's shard (TAKEOVER if no vote in 5 s)"
	}
	if res.DurableWrites == "" {
		res.DurableWrites = "off"
	}
	return res
}

// The sampler counts a record put back only when it vanished while its
// number still waited and came back at that number: a claim (the front
// past the number) or a record at another number is no restored place.
func TestLineSamplerCountsARecordPutBackAtItsNumber(t *testing.T) {
	l := newLineSampler([]*visitor{{user: "lost"}, {user: "claimed"}, {user: "moved"}, {user: "anon", anon: true}})
	if len(l.accounts) != 3 {
		t.Fatalf("accounts %q, want the three accounts", l.accounts)
	}
	for _, s := range []struct {
		u     string
		n     int64
		ok    bool
		front int64
	}{
		{"h:lost", 7, true, 5}, {"h:lost", 0, false, 5}, {"h:lost", 7, true, 6}, // lost, put back at 7
		{"h:claimed", 3, true, 2}, {"h:claimed", 0, false, 4}, {"h:claimed", 3, true, 4}, // the front had passed 3: a claim
		{"h:moved", 8, true, 5}, {"h:moved", 0, false, 5}, {"h:moved", 12, true, 5}, // back at another number
		{"h:other", 8, true, 5}, // a second account at 8
	} {
		l.note(s.u, s.n, s.ok, "1000", s.front)
	}
	if !l.restored["h:lost"] || l.restored["h:claimed"] || l.restored["h:moved"] || len(l.restored) != 1 {
		t.Errorf("restored %v, want h:lost alone", l.restored)
	}
	if d := l.duplicates(); d != 1 {
		t.Errorf("%d duplicate numbers, want 1 (8)", d)
	}
}
