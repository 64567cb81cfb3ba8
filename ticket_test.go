package waitroom_test

import (
	"bytes"
	"encoding/base64"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
)

func keyOf(t *testing.T, fill byte) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, 32))
}

func keys(t *testing.T, secret string) waitroom.TicketKeys {
	t.Helper()
	k, err := waitroom.ParseTicketKeys(secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var t0 = time.Unix(1_800_000_000, 0)

func TestTicketSignVerify(t *testing.T) {
	k := keys(t, keyOf(t, 1))
	visitor, err := waitroom.NewVisitorID()
	if err != nil || len(visitor) != 24 || !strings.HasPrefix(visitor, "v-") {
		t.Fatalf("visitor id %q, %v; want v- and 22 characters", visitor, err)
	}
	other, _ := waitroom.NewVisitorID()
	if other == visitor {
		t.Fatal("two visitor ids are equal")
	}
	tk, err := k.Sign(visitor, t0, t0.Add(time.Hour), waitroom.Spot{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Verify(tk, t0)
	if err != nil || got.Visitor != visitor || !got.IssuedAt.Equal(t0.Truncate(time.Second)) {
		t.Fatalf("Verify = %+v, %v; want %q issued at %v", got, err, visitor, t0)
	}
	if _, err := k.Sign("has.dot", t0, t0, waitroom.Spot{}); err == nil {
		t.Error("a visitor id with a dot was signed")
	}
	if _, err := (waitroom.TicketKeys{}).Sign(visitor, t0, t0, waitroom.Spot{}); err == nil {
		t.Error("signed without a key")
	}
}

func TestTicketExpiry(t *testing.T) {
	k := keys(t, keyOf(t, 1))
	tk, _ := k.Sign("v-x", t0, t0.Add(time.Minute), waitroom.Spot{})
	if _, err := k.Verify(tk, t0.Add(time.Minute-time.Second)); err != nil {
		t.Errorf("a second before expiry: %v", err)
	}
	for _, at := range []time.Time{t0.Add(time.Minute), t0.Add(time.Hour)} {
		if _, err := k.Verify(tk, at); waitroom.ErrorCode(err) != waitroom.EInvalidTicket {
			t.Errorf("at %v: %v; want invalid_ticket", at.Sub(t0), err)
		}
	}
}

func TestTicketRotation(t *testing.T) {
	oldKey, newKey := keyOf(t, 1), keyOf(t, 2)
	before := keys(t, oldKey)
	during := keys(t, newKey+","+oldKey)
	after := keys(t, newKey)
	if during.Current.ID == before.Current.ID || during.Previous.ID != before.Current.ID {
		t.Fatalf("key ids: old %s, during %s/%s", before.Current.ID, during.Current.ID, during.Previous.ID)
	}
	oldTicket, _ := before.Sign("v-a", t0, t0.Add(time.Hour), waitroom.Spot{})
	newTicket, _ := during.Sign("v-a", t0, t0.Add(time.Hour), waitroom.Spot{})
	if !strings.HasPrefix(newTicket, during.Current.ID+".") {
		t.Errorf("the current key does not sign: %s", newTicket)
	}
	for name, c := range map[string]struct {
		k      waitroom.TicketKeys
		ticket string
		ok     bool
	}{
		"old ticket, during rotation": {during, oldTicket, true},
		"new ticket, during rotation": {during, newTicket, true},
		"new ticket, after":           {after, newTicket, true},
		"old ticket, after":           {after, oldTicket, false},
		"new ticket, before":          {before, newTicket, false},
	} {
		_, err := c.k.Verify(c.ticket, t0)
		if (err == nil) != c.ok || (err != nil && waitroom.ErrorCode(err) != waitroom.EInvalidTicket) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Flipping any bit of any byte of a ticket makes it invalid: no part of it
// (key id, visitor, expiry, signature, separators) can be changed unnoticed.
func TestTicketEveryByteFlipped(t *testing.T) {
	k := keys(t, keyOf(t, 7))
	tk, _ := k.Sign("v-AAAAAAAAAAAAAAAAAAAAAA", t0, t0.Add(time.Hour), waitroom.Spot{})
	for i := range len(tk) {
		for bit := range 8 {
			b := []byte(tk)
			b[i] ^= 1 << bit
			if _, err := k.Verify(string(b), t0); waitroom.ErrorCode(err) != waitroom.EInvalidTicket {
				t.Fatalf("byte %d bit %d flipped (%q): %v; want invalid_ticket", i, bit, b, err)
			}
		}
	}
	for _, bad := range []string{"", ".", "...", tk + ".", tk[:len(tk)-1], tk + "A", strings.Replace(tk, ".", "..", 1)} {
		if _, err := k.Verify(bad, t0); waitroom.ErrorCode(err) != waitroom.EInvalidTicket {
			t.Errorf("Verify(%q) = %v; want invalid_ticket", bad, err)
		}
	}
	// A forgery under another key with the same key id shape fails too.
	forged, _ := keys(t, keyOf(t, 8)).Sign("v-AAAAAAAAAAAAAAAAAAAAAA", t0, t0.Add(time.Hour), waitroom.Spot{})
	parts := strings.SplitN(forged, ".", 2)
	if _, err := k.Verify(k.Current.ID+"."+parts[1], t0); waitroom.ErrorCode(err) != waitroom.EInvalidTicket {
		t.Errorf("forged signature accepted: %v", err)
	}
}

// The signature is compared with hmac.Equal, which takes the same time
// wherever the first difference is; ==, bytes.Equal and the like return at
// the first differing byte and would let an attacker find a valid MAC byte
// by byte. A timing test would be flaky, so the source is checked instead.
func TestTicketConstantTimeComparison(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "signed.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var hmacEqual int
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				pkg, _ := sel.X.(*ast.Ident)
				if pkg == nil {
					return true
				}
				name := pkg.Name + "." + sel.Sel.Name
				switch name {
				case "hmac.Equal":
					hmacEqual++
				case "bytes.Equal", "bytes.Compare", "strings.Compare", "strings.EqualFold", "reflect.DeepEqual":
					t.Errorf("signed.go compares with %s", name)
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if s := exprString(n); strings.Contains(s, "got") || strings.Contains(s, "mac") || strings.Contains(s, "ID") {
					t.Errorf("signed.go compares secrets with %s", n.Op)
				}
			}
		}
		return true
	})
	if hmacEqual < 2 {
		t.Errorf("hmac.Equal used %d times; want it for the signature and the key id", hmacEqual)
	}
}

func exprString(e *ast.BinaryExpr) string {
	var names []string
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			names = append(names, id.Name)
		}
		return true
	})
	return strings.Join(names, " ")
}

func TestTicketCookieAttributes(t *testing.T) {
	c, err := http.ParseSetCookie(waitroom.TicketSetCookie("abc.def", t0.Add(90*time.Second), t0))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "wr_ticket" || c.Value != "abc.def" || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge != 90 {
		t.Errorf("cookie %+v; want wr_ticket=abc.def HttpOnly Secure SameSite=Lax Path=/ Max-Age=90", c)
	}
	clear, err := http.ParseSetCookie(waitroom.TicketClearCookie())
	if err != nil || clear.Name != "wr_ticket" || clear.MaxAge >= 0 || !clear.HttpOnly || !clear.Secure || clear.Path != "/" {
		t.Errorf("clearing cookie %+v, %v", clear, err)
	}
}

func TestParseTicketKeys(t *testing.T) {
	good := keyOf(t, 3)
	if k := keys(t, ""); k.Enabled() {
		t.Error("empty TICKET_SECRET enables tickets")
	}
	urlSafe := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 40))
	if k := keys(t, urlSafe); !k.Enabled() {
		t.Error("URL-safe unpadded key refused")
	}
	for _, bad := range []string{
		base64.StdEncoding.EncodeToString(make([]byte, 31)), // too short
		"not base64 at all!",
		good + "," + good,                     // previous = current
		good + "," + keyOf(t, 4) + "," + good, // three keys
	} {
		if _, err := waitroom.ParseTicketKeys(bad); err == nil {
			t.Errorf("ParseTicketKeys(%q) accepted", bad)
		} else if strings.Contains(err.Error(), good) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
	gen, err := waitroom.GenerateTicketSecret()
	if err != nil {
		t.Fatal(err)
	}
	if k := keys(t, gen); !k.Enabled() {
		t.Error("a generated secret does not parse")
	}
}

func TestVisitorConfig(t *testing.T) {
	secret := keyOf(t, 5)
	_, err := envconfig.Load(env(map[string]string{"REDIS_URL": "redis://x:6379", "ANONYMOUS_VISITORS": "true"}), envconfig.Function)
	if err == nil || !strings.Contains(err.Error(), "TICKET_SECRET") {
		t.Errorf("anonymous visitors without a key: %v", err)
	}
	_, err = envconfig.Load(env(map[string]string{"REDIS_URL": "redis://x:6379", "TICKET_SECRET": secret[:20]}), envconfig.Function)
	if err == nil || strings.Contains(err.Error(), secret[:20]) {
		t.Errorf("short key: %v (must fail without quoting it)", err)
	}
	c, err := envconfig.Load(env(map[string]string{"REDIS_URL": "redis://x:6379", "ANONYMOUS_VISITORS": "true", "TICKET_SECRET": secret,
		"TICKET_TTL_SECONDS": "120", "CONTINUE_URL": "https://shop.example/checkout?t={entryToken}", "ORDER_FORWARD_HEADERS": "x-shop-session, X-Trace"}), envconfig.Function)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Visitor
	if !v.Anonymous || !v.Tickets.Enabled() || v.TicketTTL != 2*time.Minute || v.ContinueURL == "" || strings.Join(v.ForwardHeaders, ",") != "X-Shop-Session,X-Trace" {
		t.Errorf("visitor config %+v", v)
	}
	for name, value := range map[string]string{"ORDER_FORWARD_HEADERS": "X-User-Id", "CONTINUE_URL": "ftp://x/{entryToken}", "TICKET_TTL_SECONDS": "5"} {
		if _, err := envconfig.Load(env(map[string]string{"REDIS_URL": "redis://x:6379", name: value}), envconfig.Function); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
	local, err := envconfig.Load(env(nil), envconfig.Local)
	if err != nil || !local.Visitor.Anonymous || local.Visitor.TicketTTL != waitroom.DefaultTicketTTLSeconds*time.Second {
		t.Errorf("local defaults %+v, %v", local.Visitor, err)
	}
}

// The formats signed with the ticket key are pinned byte for byte: a
// ticket, a receipt and a challenge's solution signed before one codec
// (signed.go's seal and open) served all three still verify, and the
// ticket and the receipt are signed the same again.
func TestSignedFormatsArePinned(t *testing.T) {
	k := keys(t, keyOf(t, 7))
	const (
		ticket   = "8Oi6qxsD.v-pinned.1800000000.1800003600.tL8LwBABsWgfLU9uCQ9Micg_cjGXTtD3g1D8DAgqexo"
		receipt  = "r1.8Oi6qxsD.tv.aDphbGljZQ.1800000000123456.1800003600.nzX-13zCAEiG6GdG_AA7yTKGv2O1Hwd9EKbd20kGal0"
		solution = "c1.8Oi6qxsD.tv.DlxLmAVJSThqeHZB1o8ACw.4.1800003600.UKvkTDhdB_uMFG1i0E3lXjoV7ZpBVsLUqy-jGG_v3kE.0"
	)
	if got, err := k.Sign("v-pinned", t0, t0.Add(time.Hour), waitroom.Spot{}); err != nil || got != ticket {
		t.Errorf("ticket signed as %q %v, want %q", got, err, ticket)
	}
	if got, err := k.Verify(ticket, t0); err != nil || got.Visitor != "v-pinned" || !got.IssuedAt.Equal(t0) {
		t.Errorf("pinned ticket: %+v %v", got, err)
	}
	e := waitroom.Entry{Room: "tv", User: "h:alice", AcceptedAt: time.UnixMicro(1_800_000_000_123_456)}
	if got, err := k.SignReceipt(e, t0.Add(time.Hour)); err != nil || got != receipt {
		t.Errorf("receipt signed as %q %v, want %q", got, err, receipt)
	}
	if got, err := k.VerifyReceipt(receipt, t0); err != nil || got != e {
		t.Errorf("pinned receipt: %+v %v", got, err)
	}
	c, err := k.VerifySolution(solution, "tv", 4, t0)
	if err != nil || c.Nonce != "DlxLmAVJSThqeHZB1o8ACw" || c.Value != strings.TrimSuffix(solution, ".0") || !c.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("pinned solution: %+v %v", c, err)
	}
	// Each format's domain is its own: one's signature is no other's.
	if _, err := k.VerifyReceipt("r1.8Oi6qxsD.tv.aDphbGljZQ.1800000000123456.1800003600.tL8LwBABsWgfLU9uCQ9Micg_cjGXTtD3g1D8DAgqexo", t0); err == nil {
		t.Error("a ticket's signature verified a receipt")
	}
}
