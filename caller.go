package waitroom

import (
	"net/netip"
	"time"
)

// Caller is who sends a request, as the store's operations consume it:
// Enter, Position, BeginOrder, Admissible (and the stream's Seat) take one
// as an argument. User is the identity the request proved (a user or
// visitor id): the place in line, the entry token and the order lock are
// its. The rest is for the abuse limiter: the source IP the edge saw,
// whether this call makes a visitor and with which solved challenge.
//
// Every Caller is limited unless made by Unlimited: a literal counts its
// User's bucket (when User is set) and its address's (when IP is set; an
// unparsable IP shares one strict bucket). A call that no visitor makes
// (admission, the broker's consumer, tools, benchmarks' preparations)
// passes Unlimited(user), and the limiter takes no bucket.
type Caller struct {
	User string
	IP   string
	// NewVisitor: this call makes a visitor (an enter without identity),
	// which the bucket of new visitors per source address pays for.
	NewVisitor bool
	// Challenge: the solved challenge (CHALLENGE=pow) the new visitor came
	// with, which the enter's script records as spent before it makes one.
	Challenge ChallengeSpend
	// Place is the number of the caller's place in the room's line as its
	// credential carries it (a Spot of this line; 0: none). Enter and
	// Position put the place back at that number when the store no longer
	// holds it (a failover lost the write that made it): an acknowledged
	// place is never lost, nor moved to the back.
	Place int64
	// PlaceAt is when the credential carrying Place was signed: a place
	// signed before the room's counter started is of an earlier line.
	PlaceAt time.Time
	// Anonymous: the caller holds a ticket, whose place is all the store
	// knows of it (redisstore's line.lua): its number, which the store
	// keeps no record of, and which it claims its turn with.
	Anonymous bool

	unlimited bool // made by Unlimited
}

// Unlimited is user as the caller of a call the abuse limiter does not
// count: no address, no visitor, no challenge, no bucket.
func Unlimited(user string) Caller { return Caller{User: user, unlimited: true} }

// Limited reports whether the abuse limiter counts c's buckets: for every
// Caller but Unlimited's.
func (c Caller) Limited() bool { return !c.unlimited }

// SourceAddress is the address the limiter counts a caller by: an IPv4
// address as it is, an IPv6 address by its /64 (one host's, usually: a
// client owns all of it), "" for none or anything unparsable.
func SourceAddress(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	if a = a.Unmap().WithZone(""); a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}
