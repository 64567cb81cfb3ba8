package waitroom_test

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
)

// solved signs a challenge of bits for room and solves it.
func solved(t testing.TB, k waitroom.TicketKeys, room string, bits int, expires time.Time) (waitroom.Challenge, string) {
	t.Helper()
	c, err := k.NewChallenge(room, bits, expires)
	if err != nil {
		t.Fatal(err)
	}
	return c, waitroom.SolveChallenge(c.Value, c.Bits)
}

func TestChallengeSignSolveVerify(t *testing.T) {
	k := keys(t, keyOf(t, 1))
	c, solution := solved(t, k, "tv", 12, t0.Add(waitroom.ChallengeTTL))
	if !strings.HasPrefix(c.Value, "c1."+k.Current.ID+".tv.") || len(c.Nonce) != 22 || c.Bits != 12 || !c.ExpiresAt.Equal(t0.Add(waitroom.ChallengeTTL)) {
		t.Fatalf("challenge %+v", c)
	}
	if sum := sha256.Sum256([]byte(solution)); waitroom.LeadingZeroBits(sum[:]) < 12 || !strings.HasPrefix(solution, c.Value+".") {
		t.Fatalf("solution %q does not solve %q", solution, c.Value)
	}
	got, err := k.VerifySolution(solution, "tv", 12, t0)
	if err != nil || got != c {
		t.Fatalf("VerifySolution = %+v, %v; want %+v", got, err, c)
	}
	other, _ := k.NewChallenge("tv", 12, t0.Add(time.Minute))
	if other.Nonce == c.Nonce {
		t.Fatal("two challenges share a nonce")
	}
	for name, bad := range map[string]func() (waitroom.Challenge, error){
		"no key":     func() (waitroom.Challenge, error) { return waitroom.TicketKeys{}.NewChallenge("tv", 12, t0) },
		"a bad room": func() (waitroom.Challenge, error) { return k.NewChallenge("T.V", 12, t0) },
		"0 bits":     func() (waitroom.Challenge, error) { return k.NewChallenge("tv", 0, t0) },
		"99 bits":    func() (waitroom.Challenge, error) { return k.NewChallenge("tv", 99, t0) },
	} {
		if _, err := bad(); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
}

func TestLeadingZeroBits(t *testing.T) {
	for _, c := range []struct {
		sum  []byte
		want int
	}{
		{[]byte{0x80}, 0}, {[]byte{0x7f}, 1}, {[]byte{0x01}, 7}, {[]byte{0, 0xff}, 8},
		{[]byte{0, 0, 0x10}, 19}, {[]byte{0, 0}, 16}, {nil, 0},
	} {
		if got := waitroom.LeadingZeroBits(c.sum); got != c.want {
			t.Errorf("LeadingZeroBits(%x) = %d, want %d", c.sum, got, c.want)
		}
	}
}

// Every way a solution can be wrong is refused with challenge_required's
// reason, and nothing panics: the table of the verifier's refusals.
func TestSolutionRefusals(t *testing.T) {
	k := keys(t, keyOf(t, 1))
	c, good := solved(t, k, "tv", 10, t0.Add(time.Minute))
	counter := good[len(c.Value)+1:]
	otherKey := keys(t, keyOf(t, 9))
	_, foreignSolution := solved(t, otherKey, "tv", 10, t0.Add(time.Minute))
	forged := strings.Replace(foreignSolution, otherKey.Current.ID, k.Current.ID, 1) // the other key's MAC under our key id
	_, otherRoom := solved(t, k, "radio", 10, t0.Add(time.Minute))
	_, easy := solved(t, k, "tv", 4, t0.Add(time.Minute))
	wrong := c.Value + ".0"
	for n := 0; ; n++ { // a counter that does not solve it
		wrong = c.Value + "." + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(wrong)); waitroom.LeadingZeroBits(sum[:]) < 10 {
			break
		}
	}
	cases := map[string]struct {
		solution, reason string
		at               time.Time
	}{
		"empty":                   {"", "malformed", t0},
		"garbage":                 {"x", "malformed", t0},
		"the challenge alone":     {c.Value, "malformed", t0},
		"another version":         {"c2" + good[2:], "malformed", t0},
		"a dot more":              {good + ".1", "malformed", t0},
		"too long":                {c.Value + "." + strings.Repeat("0", 300), "malformed", t0},
		"unknown key":             {foreignSolution, "unknown key", t0},
		"forged under our key id": {forged, "bad signature", t0},
		"signature not base64url": {strings.Replace(good, c.Value[len(c.Value)-4:], "+/==", 1), "bad signature", t0},
		"altered nonce":           {strings.Replace(good, c.Nonce, other(c.Nonce[0])+c.Nonce[1:], 1), "bad signature", t0},
		"altered bits":            {strings.Replace(good, ".10.", ".11.", 1), "bad signature", t0},
		"expired":                 {good, "expired", t0.Add(time.Minute)},
		"long expired":            {good, "expired", t0.Add(time.Hour)},
		"another room":            {otherRoom, "another room", t0},
		"easier than asked":       {easy, "easier than this room asks", t0},
		"a wrong counter":         {wrong, "does not solve it", t0},
		"a signed counter":        {c.Value + ".-1", "malformed counter", t0},
		"a letter in the counter": {c.Value + ".1a", "malformed counter", t0},
		"17 digits":               {c.Value + "." + strings.Repeat("1", 17), "malformed counter", t0},
		"no counter":              {c.Value + ".", "malformed counter", t0},
		"counter with spaces":     {c.Value + ". " + counter, "malformed counter", t0},
	}
	for name, tc := range cases {
		_, err := k.VerifySolution(tc.solution, "tv", 10, tc.at)
		if err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v; want a refusal naming %q", name, err, tc.reason)
		}
		if e := waitroom.ChallengeRequired(err); e.Code != waitroom.EChallengeRequired || !strings.Contains(e.Message, tc.reason) {
			t.Errorf("%s: answered %+v", name, e)
		}
	}
	// Every byte of a good solution flipped: refused, whichever part it hits.
	for i := range len(good) {
		b := []byte(good)
		b[i] ^= 1
		if _, err := k.VerifySolution(string(b), "tv", 10, t0); err == nil && string(b) != good {
			// Only a flip in the counter can still solve it by chance.
			if i <= len(c.Value) {
				t.Errorf("byte %d flipped (%q) still verifies", i, b)
			}
		}
	}
}

// A challenge rotates with the ticket key: signed by the previous key it
// verifies during the rotation, and not after.
func TestChallengeRotation(t *testing.T) {
	oldKey, newKey := keyOf(t, 1), keyOf(t, 2)
	_, solution := solved(t, keys(t, oldKey), "tv", 8, t0.Add(time.Minute))
	if _, err := keys(t, newKey+","+oldKey).VerifySolution(solution, "tv", 8, t0); err != nil {
		t.Errorf("during the rotation: %v", err)
	}
	if _, err := keys(t, newKey).VerifySolution(solution, "tv", 8, t0); err == nil {
		t.Error("after the rotation the old key's challenge still verifies")
	}
	// A challenge is never a ticket nor a receipt, under the same key.
	k := keys(t, oldKey)
	if _, err := k.Verify(solution, t0); err == nil {
		t.Error("a solution verifies as a ticket")
	}
	if _, err := k.VerifyReceipt(solution, t0); err == nil {
		t.Error("a solution verifies as a receipt")
	}
}

func TestChallengeVariables(t *testing.T) {
	for _, tc := range []struct {
		kv   map[string]string
		mode waitroom.ChallengeMode
		bits int
	}{
		{map[string]string{}, waitroom.ChallengeOff, waitroom.DefaultChallengeBits},
		{map[string]string{"CHALLENGE": "pow"}, waitroom.ChallengePoW, waitroom.DefaultChallengeBits},
		{map[string]string{"CHALLENGE": " POW ", "CHALLENGE_BITS": "1"}, waitroom.ChallengePoW, 1},
		{map[string]string{"CHALLENGE": "off", "CHALLENGE_BITS": "24"}, waitroom.ChallengeOff, 24},
	} {
		c, err := envconfig.Load(env(tc.kv), envconfig.Local)
		if err != nil || c.Visitor.Challenge != tc.mode || c.Visitor.ChallengeBits != tc.bits {
			t.Errorf("%v: %q %d %v; want %q %d", tc.kv, c.Visitor.Challenge, c.Visitor.ChallengeBits, err, tc.mode, tc.bits)
		}
	}
	for name, bad := range map[string][]map[string]string{
		"CHALLENGE": {{"CHALLENGE": "on"}, {"CHALLENGE": "captcha"}, {"CHALLENGE": "pow", "ANONYMOUS_VISITORS": "false"}},
		"CHALLENGE_BITS": {{"CHALLENGE_BITS": "0"}, {"CHALLENGE_BITS": "25"}, {"CHALLENGE_BITS": "16.5"},
			{"CHALLENGE_BITS": "sixteen"}, {"CHALLENGE": "pow", "CHALLENGE_BITS": "-1"}},
	} {
		for _, kv := range bad {
			_, err := envconfig.Load(env(kv), envconfig.Local)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%v: err %v, want one naming %s", kv, err, name)
			}
		}
	}
}

// The verifier: never a panic, and whatever it accepts is a solution of a
// challenge this key signed, for the room, unexpired, at least as hard as
// asked, whose hash has the zero bits.
func FuzzVerifySolution(f *testing.F) {
	k, err := waitroom.ParseTicketKeys(strings.Repeat("k", 44))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	c, _ := k.NewChallenge("tv", 6, now.Add(time.Minute))
	good := waitroom.SolveChallenge(c.Value, 6)
	for _, s := range []string{good, good + "0", strings.Replace(good, ".tv.", ".tw.", 1), c.Value, "c1.a.b.c.d.e.f.g", "", "........"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, solution string) {
		got, err := k.VerifySolution(solution, "tv", 6, now)
		if err != nil {
			return
		}
		sum := sha256.Sum256([]byte(solution))
		if got.Room != "tv" || got.Bits < 6 || !now.Before(got.ExpiresAt) || waitroom.LeadingZeroBits(sum[:]) < got.Bits ||
			solution != got.Value+solution[len(got.Value):] || !strings.HasPrefix(got.Value, "c1."+k.Current.ID+".tv."+got.Nonce+".") {
			t.Fatalf("%q accepted as %+v", solution, got)
		}
	})
}

// The server's side of the proof of work, per request: checking a solution
// (BenchmarkChallengeVerify) and signing the challenge of a 428
// (BenchmarkChallengeIssue). make bench-challenge puts them in docs/design.md.
func BenchmarkChallengeVerify(b *testing.B) {
	k, _ := waitroom.ParseTicketKeys(strings.Repeat("k", 44))
	now := time.Unix(1_800_000_000, 0)
	c, _ := k.NewChallenge("tv-launch", waitroom.DefaultChallengeBits, now.Add(waitroom.ChallengeTTL))
	solution := waitroom.SolveChallenge(c.Value, c.Bits)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.VerifySolution(solution, "tv-launch", waitroom.DefaultChallengeBits, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChallengeIssue(b *testing.B) {
	k, _ := waitroom.ParseTicketKeys(strings.Repeat("k", 44))
	exp := time.Unix(1_800_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.NewChallenge("tv-launch", waitroom.DefaultChallengeBits, exp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChallengeHash is the attacker's side: one SHA-256 of a
// solution-sized input in Go on one core, what a native solver pays per
// try (about 2^bits tries a challenge).
func BenchmarkChallengeHash(b *testing.B) {
	k, _ := waitroom.ParseTicketKeys(strings.Repeat("k", 44))
	c, _ := k.NewChallenge("tv-launch", waitroom.DefaultChallengeBits, time.Unix(1_800_000_000, 0))
	buf := append([]byte(c.Value), '.')
	n := uint64(0)
	for b.Loop() {
		s := strconv.AppendUint(buf, n, 10)
		sum := sha256.Sum256(s)
		n += uint64(sum[0] & 1)
	}
}

// other is a base64url letter other than b: a nonce altered at its first
// letter must differ from it (one nonce in 64 starts with any given letter).
func other(b byte) string {
	if b == 'A' {
		return "B"
	}
	return "A"
}

// exactly returns the solution of value with the smallest counter whose
// hash begins with exactly zeros zero bits (about 2^(zeros+1) hashes).
func exactly(value string, zeros int) string {
	for n := 0; ; n++ {
		s := value + "." + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(s)); waitroom.LeadingZeroBits(sum[:]) == zeros {
			return s
		}
	}
}

// Issue 37: the difficulty's edges. A solution one bit short of its
// challenge is refused and one of exactly its bits accepted; a challenge one
// bit easier than the room asks (minBits) is refused, one of exactly
// minBits accepted; a counter of 16 digits (the most) accepted; the signer
// takes 1 to 24 bits and nothing outside.
// Either edge moved by one halves or doubles what an identity costs.
func TestChallengeDifficultyEdges(t *testing.T) {
	const bits = 10
	k := keys(t, keyOf(t, 1))
	c, err := k.NewChallenge("tv", bits, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.VerifySolution(exactly(c.Value, bits-1), "tv", bits, t0); err == nil || !strings.Contains(err.Error(), "does not solve it") {
		t.Errorf("a solution of exactly %d zero bits: %v; want refused as not solving a %d-bit challenge", bits-1, err, bits)
	}
	if got, err := k.VerifySolution(exactly(c.Value, bits), "tv", bits, t0); err != nil || got != c {
		t.Errorf("a solution of exactly %d zero bits: %+v, %v; want accepted", bits, got, err)
	}
	easy, err := k.NewChallenge("tv", bits-1, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// Even a hash of bits zero bits does not make an easier challenge do.
	if _, err := k.VerifySolution(exactly(easy.Value, bits), "tv", bits, t0); err == nil || !strings.Contains(err.Error(), "easier than this room asks") {
		t.Errorf("a %d-bit challenge where %d are asked: %v; want refused", bits-1, bits, err)
	}
	if _, err := k.VerifySolution(exactly(easy.Value, bits-1), "tv", bits-1, t0); err != nil {
		t.Errorf("a %d-bit challenge where %d are asked: %v; want accepted", bits-1, bits-1, err)
	}
	// The counter's longest: 16 digits solve it (17 are malformed,
	// TestSolutionRefusals).
	for n := uint64(1e15); ; n++ {
		s := c.Value + "." + strconv.FormatUint(n, 10)
		if sum := sha256.Sum256([]byte(s)); waitroom.LeadingZeroBits(sum[:]) >= bits {
			if _, err := k.VerifySolution(s, "tv", bits, t0); err != nil {
				t.Errorf("a 16-digit counter: %v; want accepted", err)
			}
			break
		}
	}
	for b, ok := range map[int]bool{0: false, 1: true, 24: true, 25: false} {
		if _, err := k.NewChallenge("tv", b, t0.Add(time.Minute)); (err == nil) != ok {
			t.Errorf("NewChallenge of %d bits: %v; want signed %v", b, err, ok)
		}
	}
}
