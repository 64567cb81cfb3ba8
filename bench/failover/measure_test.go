package failover

import (
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
		if seqs.restored[v.user] {
			res.PlacesRestored++
		}
		if len(v.tokens) > 1 {
			res.DoubleAdmissions++
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
