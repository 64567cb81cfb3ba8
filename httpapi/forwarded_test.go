package httpapi_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 32: a CloudFront-Viewer-Address that does not parse turned the
// per-address buckets off (the limiter counted the request under no
// address). It is refused now: a request through CloudFront always has a
// viewer, so one without a readable address is not counted, it is turned away.
func TestUnparsableViewerAddressIsRefused(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		const secret = "an-origin-secret-of-the-stack-0123"
		h := newHarness(t, engine, fromEnv(t, map[string]string{"ORIGIN_SECRET": secret}))
		edge := func(viewer string) eventResp {
			hdr := map[string]string{"cloudfront-viewer-address": viewer, "x-origin-secret": secret}
			return h.call(withSource("130.176.0.1", request("POST", "/queue/enter", "", hdr)))
		}
		for _, viewer := range []string{"", "garbage", "999.1.1.1:80", "host.example:443", "[2001:db8::7", "198.51.100.7:80:80x", ":443"} {
			for i := 0; i < 3; i++ {
				wantError(t, edge(viewer), 400, "invalid_request")
			}
		}
		for _, viewer := range []string{"198.51.100.7:46532", "[2001:db8::7]:443", "2001:db8::8:443", "198.51.100.8"} {
			if r := edge(viewer); r.StatusCode != 200 {
				t.Fatalf("viewer %q: %d %s", viewer, r.StatusCode, r.Body)
			}
		}
	})
}

// Issue 32: behind a reverse proxy every visitor came from the proxy's
// address, so that one client minting visitors blocked anonymous joining
// for everyone. With TRUSTED_PROXIES, a request whose peer is one of them
// is counted by the client the proxies report: the rightmost address of
// X-Forwarded-For (or Forwarded) that is not a trusted proxy.
func TestTrustedProxiesKeyTheLimiterOnTheClient(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, fromEnv(t, map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8, 2001:db8:ffff::/48"}))
		enter := func(peer string, hdr map[string]string) eventResp {
			return h.call(withSource(peer, request("POST", "/queue/enter", "", hdr)))
		}
		xff := func(v string) map[string]string { return map[string]string{"x-forwarded-for": v} }
		for i := 0; i < 30; i++ { // thirty clients through one proxy: none limited by the proxy's address
			if r := enter("10.0.0.2", xff(fmt.Sprintf("198.51.100.%d, 10.1.2.3", i+10))); r.StatusCode != 200 {
				t.Fatalf("client %d through the proxy: %d %s", i, r.StatusCode, r.Body)
			}
		}
		// One client is limited as itself, whatever it writes to the left
		// of what the proxy appended.
		limited := 0
		for i := 0; i < 30; i++ {
			if enter("10.0.0.2", xff(fmt.Sprintf("192.0.2.%d, 203.0.113.50", i))).StatusCode == 429 {
				limited++
			}
		}
		if limited < 30-waitroom.DefaultVisitorBurst-2 {
			t.Fatalf("one client made %d visitors of 30 through the proxy", 30-limited)
		}
		// A peer that is not a trusted proxy is counted as itself, whatever
		// X-Forwarded-For it writes.
		limited = 0
		for i := 0; i < 30; i++ {
			if enter("203.0.113.77", xff(fmt.Sprintf("198.51.101.%d", i))).StatusCode == 429 {
				limited++
			}
		}
		if limited < 30-waitroom.DefaultVisitorBurst-2 {
			t.Fatalf("an untrusted peer naming its own addresses made %d visitors of 30", 30-limited)
		}
		// Forwarded (RFC 7239) when there is no X-Forwarded-For; an IPv6 proxy.
		fwd := map[string]string{"forwarded": `for=192.0.2.60;proto=https, for="[2001:db8:cafe::17]:4711"`}
		if r := enter("2001:db8:ffff::1", fwd); r.StatusCode != 200 {
			t.Fatalf("Forwarded through an IPv6 proxy: %d %s", r.StatusCode, r.Body)
		}
		// A hop that is not an address, or two headers naming two clients:
		// refused, never counted under no address.
		for _, hdr := range []map[string]string{
			xff("198.51.100.9, garbage"),
			xff(""),
			{"forwarded": "for=unknown"},
			{"x-forwarded-for": "198.51.100.9", "forwarded": "for=192.0.2.1"},
		} {
			wantError(t, enter("10.0.0.2", hdr), 400, "invalid_request")
		}
		both := map[string]string{"x-forwarded-for": "198.51.100.9", "forwarded": `for="198.51.100.9:1234"`}
		if r := enter("10.0.0.2", both); r.StatusCode != 200 {
			t.Fatalf("both headers naming one client: %d %s", r.StatusCode, r.Body)
		}
	})
}

// Issue 32: without PROXY_SECRET (a local runner on loopback), X-User-Id
// is believed only from this machine. A request that carries a proxy's
// forwarding header came through a proxy that may relay it from anyone:
// its X-User-Id is refused, with PROXY_SECRET it is believed as before.
func TestRelayedUserHeaderRefusedWithoutProxySecret(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.TrustUserHeader = true })
		tokens := admitDirect(t, h, "carol")
		for _, name := range []string{"forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip", "via"} {
			hdr := map[string]string{name: "198.51.100.7"}
			wantError(t, h.call(request("GET", "/queue/position", "carol", hdr)), 403, "forbidden")
			hdr["x-entry-token"], hdr["idempotency-key"] = tokens["carol"], "k-"+name
			wantError(t, h.call(request("POST", "/orders", "carol", hdr)), 403, "forbidden")
		}
		if h.down.calls.Load() != 0 {
			t.Fatal("the order API was called")
		}
		// Without X-User-Id a relayed request is not refused for its relay:
		// it has no identity (a local runner makes it a visitor: localrun's
		// TestForgedUserHeaderThroughAProxyIsRefused).
		wantError(t, h.call(request("GET", "/queue/position", "", map[string]string{"x-forwarded-for": "198.51.100.7"})), 401, "unauthenticated")
		if r := h.call(request("GET", "/queue/position", "carol", nil)); r.StatusCode != 200 || decode(t, r)["entryToken"] != tokens["carol"] {
			t.Fatalf("carol from this machine: %d %s", r.StatusCode, r.Body)
		}

		h = newHarness(t, engine, behindProxy)
		tokens = admitDirect(t, h, "carol")
		hdr := map[string]string{"x-forwarded-for": "198.51.100.7", "x-proxy-secret": proxySecret}
		if r := h.call(request("GET", "/queue/position", "carol", hdr)); r.StatusCode != 200 || decode(t, r)["entryToken"] != tokens["carol"] {
			t.Fatalf("carol through the proxy that sends PROXY_SECRET: %d %s", r.StatusCode, r.Body)
		}
	})
}

// A receipt's holder that proves no identity is answered for the entry,
// counted by its address: one that cannot be read is refused there too,
// never answered unlimited.
func TestReceiptPositionNeedsAnAddress(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30, func(c *waitroom.Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		})
		receipt := h.accepted(t, "alice")
		h.run(t)
		position := func(xff string) eventResp {
			return h.call(withSource("10.0.0.2", request("GET", "/queue/position", "", map[string]string{"x-queue-receipt": receipt, "x-forwarded-for": xff})))
		}
		wantError(t, position("198.51.100.9, garbage"), 400, "invalid_request")
		if r := position("198.51.100.9"); r.StatusCode != 200 {
			t.Fatalf("the receipt's holder through the proxy: %d %s", r.StatusCode, r.Body)
		}
	})
}
