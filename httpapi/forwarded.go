package httpapi

import (
	"net/netip"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// Where a request comes from when proxies stand in front (docs/security.md,
// "Behind a reverse proxy"). The peer's address is the only one nobody
// can write; a proxy's report of its own peer is believed when the proxy
// is one the operator named (TRUSTED_PROXIES), and only its own entry:
// every proxy appends the address it took the request from, so the
// rightmost entry that is not a trusted proxy is the client, and whatever
// the client wrote to the left of it is never read.

// relayHeaders are the headers a reverse proxy adds to what it relays. A
// request that carries one came through a proxy, which may relay a
// client's X-User-Id as it was written.
var relayHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
	"X-Forwarded-Port", "X-Forwarded-Server", "X-Real-IP", "Via", "True-Client-IP", "X-Client-IP"}

// relayed names the first relay header of req ("" for none).
func relayed(req events.APIGatewayV2HTTPRequest) string {
	for _, name := range relayHeaders {
		if _, ok := lookupHeader(req, name); ok {
			return name
		}
	}
	return ""
}

// clientHeaders are the headers in which proxies report the client they
// took a request from, in the order they are read, and how each lists its
// hops.
var clientHeaders = []struct {
	name string
	hops func(string) []string
}{{"X-Forwarded-For", xffHops}, {"Forwarded", forwardedHops}}

// forwardedClient is the client a trusted proxy reports for a request
// whose peer is peer and whose clientHeaders are reports (by name, those
// it carries); the peer itself when TRUSTED_PROXIES does not name it or
// it reports nothing. A hop that is not an address, or X-Forwarded-For and
// Forwarded naming two clients, is 400 invalid_request: such a request is
// never counted under no address, nor under one its client chose.
func (a *API) forwardedClient(peer string, reports map[string]string) (string, error) {
	if !a.trustedProxy(peer) {
		return peer, nil
	}
	client := peer
	seen := false
	for _, h := range clientHeaders {
		v, ok := reports[h.name]
		if !ok {
			continue
		}
		hops := h.hops(v)
		if len(hops) == 0 { // a Forwarded of proto= and host= alone
			continue
		}
		c, valid := a.rightmostUntrusted(hops)
		switch {
		case !valid:
			return "", waitroom.Errorf(waitroom.EInvalidRequest, "%s names a hop that is not an IP address, so this request cannot be counted by its client", h.name)
		case seen && c != client:
			return "", waitroom.Errorf(waitroom.EInvalidRequest, "X-Forwarded-For and Forwarded name two different clients")
		}
		client, seen = c, true
	}
	return client, nil
}

// rightmostUntrusted walks hops from the right, past the trusted proxies,
// to the first that is not one; when all are, the leftmost. valid is
// false when a hop read before the client is found is not an address.
func (a *API) rightmostUntrusted(hops []string) (client string, valid bool) {
	for i := len(hops) - 1; i >= 0; i-- {
		addr, ok := hopAddress(hops[i])
		if !ok {
			return "", false
		}
		if client = addr.String(); !a.trustedProxy(client) {
			return client, true
		}
	}
	return client, client != ""
}

func (a *API) trustedProxy(ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range a.Config.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// xffHops splits X-Forwarded-For: "client, proxy1, proxy2" (several
// headers arrive joined by commas).
func xffHops(v string) []string { return strings.Split(v, ",") }

// forwardedHops is the for= of each element of Forwarded (RFC 7239):
// `for=192.0.2.60;proto=https, for="[2001:db8:cafe::17]:4711"`. An
// element without for= names no hop.
func forwardedHops(v string) []string {
	var hops []string
	for _, element := range strings.Split(v, ",") {
		for _, pair := range strings.Split(element, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(pair), "=")
			if strings.EqualFold(name, "for") {
				hops = append(hops, strings.Trim(value, `"`))
			}
		}
	}
	return hops
}

// hopAddress reads one hop: an address, with or without a port, IPv6 in
// brackets or bare.
func hopAddress(hop string) (netip.Addr, bool) {
	hop = strings.TrimSpace(hop)
	if ap, err := netip.ParseAddrPort(hop); err == nil {
		return ap.Addr().Unmap(), true
	}
	addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(hop, "["), "]"))
	return addr.Unmap(), err == nil
}

// viewerAddress reads CloudFront-Viewer-Address, "<ip>:<port>", an IPv6
// address bracketed or not; ok is false for anything else.
func viewerAddress(v string) (string, bool) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap.Addr().Unmap().String(), true
	}
	if i := strings.LastIndexByte(v, ':'); i > 0 && strings.Count(v, ":") > 1 { // an IPv6 address unbracketed, then the port
		if addr, err := netip.ParseAddr(v[:i]); err == nil && addr.Is6() && validPort(v[i+1:]) {
			return addr.Unmap().String(), true
		}
	}
	if addr, err := netip.ParseAddr(v); err == nil { // no port
		return addr.Unmap().String(), true
	}
	return "", false
}

func validPort(s string) bool {
	_, err := netip.ParseAddrPort("0.0.0.0:" + s)
	return err == nil
}
