package waitroom_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// Tickets: never a panic, and whatever verifies is exactly a ticket the key
// signed (no other spelling of it, no other visitor, no later expiry).
func FuzzTicketVerify(f *testing.F) {
	keys, err := waitroom.ParseTicketKeys(strings.Repeat("k", 44))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	good, _ := keys.Sign("v-visitor", now, now.Add(time.Hour), waitroom.Spot{})
	f.Add(good)
	f.Add(strings.Replace(good, "v-visitor", "v-visitoR", 1))
	f.Add("a.b.c.d")
	f.Add("")
	f.Fuzz(func(t *testing.T, ticket string) {
		got, err := keys.Verify(ticket, now)
		if err != nil {
			if waitroom.ErrorCode(err) != waitroom.EInvalidTicket {
				t.Fatalf("error code %q", waitroom.ErrorCode(err))
			}
			return
		}
		// What verifies is exactly what the key signs: one spelling per ticket.
		parts := strings.Split(ticket, ".")
		if len(parts) != 5 { // the first format is never signed any more
			return
		}
		var issued, exp int64
		fmt.Sscan(parts[2], &issued)
		fmt.Sscan(parts[3], &exp)
		again, _ := keys.Sign(got.Visitor, time.Unix(issued, 0), time.Unix(exp, 0), waitroom.Spot{})
		if again != ticket {
			t.Fatalf("%q verifies as %+v but the key signs %q", ticket, got, again)
		}
	})
}

// The validators agree with their documented rules and never panic.
func FuzzValidators(f *testing.F) {
	for _, s := range []string{"default", "tv-launch", "Tv", "-x", "a", strings.Repeat("a", 65), "zoë", "a\x00", "", "tv.AAAAAAAAAAAAAAAAAAAAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if waitroom.ValidRoom(s) {
			if len(s) == 0 || len(s) > 64 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || s[0] == '-' {
				t.Fatalf("room %q accepted", s)
			}
		}
		printable := len(s) >= 1 && len(s) <= 128 && strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) < 0
		if (waitroom.CheckUser(s) == nil) != printable {
			t.Fatalf("user %q: accepted %v, printable %v", s, waitroom.CheckUser(s) == nil, printable)
		}
		if (waitroom.CheckIdempotencyKey(s) == nil) != printable {
			t.Fatalf("key %q: accepted %v, printable %v", s, waitroom.CheckIdempotencyKey(s) == nil, printable)
		}
		if room, ok := waitroom.TokenRoom(s); ok && (!waitroom.ValidRoom(room) || !strings.HasPrefix(s, room+".")) {
			t.Fatalf("token %q: room %q", s, room)
		}
	})
}
