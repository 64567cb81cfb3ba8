package main

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// EgressMode chooses how the order gate reaches ORDER_API_URL. There is no
// default: each mode costs differently and only one fits a given order API.
type EgressMode string

const (
	// EgressPrivate: the order API is inside this VPC or reachable through a
	// peering connection or transit gateway. The gate may open the order
	// API's port to OrderAPICidr (or OrderAPIPrefixList) only. No NAT, no charge.
	EgressPrivate EgressMode = "private"
	// EgressIPv6: a public order API with an AAAA record, over IPv6 through
	// an egress-only internet gateway (no hourly charge). The VPC is dual-stack;
	// only the gate's own subnets have the route.
	EgressIPv6 EgressMode = "ipv6"
	// EgressNAT: a public order API over IPv4 through one NAT gateway (about
	// $36.50 a month with its public IPv4 address, plus $0.045 per GB).
	EgressNAT EgressMode = "nat"
)

// VpcCidr is the stack's VPC. A private order API outside it needs a route.
const VpcCidr = "10.40.0.0/16"

// Egress is the order gate's way out.
type Egress struct {
	Mode EgressMode
	// OrderAPICidr (IPv4) or OrderAPIPrefixList (pl-…): where a private order
	// API lives (EgressPrivate only).
	OrderAPICidr       string
	OrderAPIPrefixList string
	// OrderAPIRouteTarget is the peering connection (pcx-…) or transit
	// gateway (tgw-…) that leads to a private order API outside VpcCidr.
	OrderAPIRouteTarget string
	// OrderAPIPrivateDNS says the order API's host name resolves, inside
	// this VPC, to an address in OrderAPICidr (a Route 53 private hosted
	// zone, say), although it does not look private.
	OrderAPIPrivateDNS bool
}

var (
	prefixListRE  = regexp.MustCompile(`^pl-[0-9a-f]{8,17}$`)
	routeTargetRE = regexp.MustCompile(`^(pcx|tgw)-[0-9a-f]{8,17}$`)
	// privateNameSuffixes are DNS names that only resolve, or only lead,
	// inside a private network: reserved private TLDs and AWS's names for
	// interface endpoints and internal load balancers.
	privateNameSuffixes = []string{".internal", ".local", ".localdomain", ".lan", ".intranet", ".corp", ".private",
		".home.arpa", ".vpce.amazonaws.com"}
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
)

// hostIsPrivate reports whether host names a private network: an RFC 1918,
// RFC 6598 or IPv6 ULA address, or a private-looking name. known is false
// for a name that could be either (say orders.example.com).
func hostIsPrivate(host string) (private, known bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || cgnat.Contains(a), true
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || (strings.HasPrefix(h, "internal-") && strings.HasSuffix(h, ".elb.amazonaws.com")) {
		return true, true
	}
	for _, s := range privateNameSuffixes {
		if strings.HasSuffix(h, s) {
			return true, true
		}
	}
	return false, false
}

// orderAPIPort is the port the gate opens: the URL's, or its scheme's.
func orderAPIPort(raw string) int {
	u, _ := url.Parse(raw)
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// validate returns a check that refuses a mode that cannot reach the order
// API, naming the setting to change.
func (e Egress) validate(orderAPIURL string) func() error {
	return func() error {
		u, err := url.Parse(orderAPIURL)
		if err != nil {
			return nil // validateConfig reports it
		}
		host := u.Hostname()
		switch e.Mode {
		case EgressPrivate:
			return e.validatePrivate(host)
		case EgressIPv6, EgressNAT:
			if e.OrderAPICidr != "" || e.OrderAPIPrefixList != "" || e.OrderAPIRouteTarget != "" || e.OrderAPIPrivateDNS {
				return fmt.Errorf("waitroom: orderApiCidr, orderApiPrefixList, orderApiRouteTarget and orderApiPrivateDns "+
					"only apply to orderGateEgress=private, not %s", e.Mode)
			}
			return e.validatePublic(host)
		case "":
			return fmt.Errorf("waitroom: orderGateEgress is required: %q (an order API inside this VPC or a peered one, "+
				"with orderApiCidr; no charge), %q (a public order API with an AAAA record; no hourly charge) or %q "+
				"(a public order API over IPv4; about $36.50/month). See infra/README.md, \"The order gate's way out\"",
				EgressPrivate, EgressIPv6, EgressNAT)
		default:
			return fmt.Errorf("waitroom: orderGateEgress %q: want %q, %q or %q", e.Mode, EgressPrivate, EgressIPv6, EgressNAT)
		}
	}
}

// validatePublic: the order API of ipv6 and nat is on the internet.
func (e Egress) validatePublic(host string) error {
	if private, _ := hostIsPrivate(host); private {
		return fmt.Errorf("waitroom: orderApiUrl host %s is private, which orderGateEgress=%s does not reach: "+
			"set orderGateEgress=private with orderApiCidr", host, e.Mode)
	}
	if a, err := netip.ParseAddr(host); err == nil && e.Mode == EgressIPv6 && a.Unmap().Is4() {
		return fmt.Errorf("waitroom: orderApiUrl host %s is an IPv4 address, which orderGateEgress=ipv6 cannot reach "+
			"(the gate's only way out is IPv6): set orderGateEgress=nat, or use the API's IPv6 address or DNS name", host)
	}
	return nil
}

// validatePrivate: a private order API needs its range, a private host in
// it, and a route when it is outside the VPC.
func (e Egress) validatePrivate(host string) error {
	if (e.OrderAPICidr == "") == (e.OrderAPIPrefixList == "") {
		return fmt.Errorf("waitroom: orderGateEgress=private needs exactly one of orderApiCidr (the order API's IPv4 range, "+
			"%s for this VPC) and orderApiPrefixList (pl-…)", VpcCidr)
	}
	if e.OrderAPIPrefixList != "" && !prefixListRE.MatchString(e.OrderAPIPrefixList) {
		return fmt.Errorf("waitroom: orderApiPrefixList %q: want a managed prefix list id (pl-…)", e.OrderAPIPrefixList)
	}
	if e.OrderAPIRouteTarget != "" && !routeTargetRE.MatchString(e.OrderAPIRouteTarget) {
		return fmt.Errorf("waitroom: orderApiRouteTarget %q: want a peering connection (pcx-…) or transit gateway (tgw-…)", e.OrderAPIRouteTarget)
	}
	outside := e.OrderAPIPrefixList != ""
	if e.OrderAPICidr != "" {
		cidr, err := netip.ParsePrefix(e.OrderAPICidr)
		if err != nil || !cidr.Addr().Is4() || !cidr.Addr().IsPrivate() && !cgnat.Contains(cidr.Addr()) {
			return fmt.Errorf("waitroom: orderApiCidr %q: want a private IPv4 range such as 10.0.0.0/16", e.OrderAPICidr)
		}
		vpc := netip.MustParsePrefix(VpcCidr)
		outside = !(vpc.Contains(cidr.Addr()) && cidr.Bits() >= vpc.Bits())
		if a, err := netip.ParseAddr(host); err == nil && !cidr.Contains(a.Unmap()) {
			return fmt.Errorf("waitroom: orderApiUrl host %s is not inside orderApiCidr %s: change orderApiCidr", host, cidr)
		}
	}
	if outside && e.OrderAPIRouteTarget == "" {
		return fmt.Errorf("waitroom: the order API's range is outside this VPC (%s), so the gate needs a route: "+
			"set orderApiRouteTarget to the peering connection (pcx-…) or transit gateway (tgw-…)", VpcCidr)
	}
	private, known := hostIsPrivate(host)
	switch {
	case known && !private:
		return fmt.Errorf("waitroom: orderApiUrl host %s is a public address, which orderGateEgress=private cannot reach: "+
			"set orderGateEgress=nat (or ipv6 when the API has an IPv6 address)", host)
	case !known && !e.OrderAPIPrivateDNS:
		return fmt.Errorf("waitroom: orderApiUrl host %s looks public, which orderGateEgress=private cannot reach: "+
			"set orderGateEgress=ipv6 or nat; or, if this name resolves inside the VPC to an address in the order API's "+
			"range (a Route 53 private hosted zone), set orderApiPrivateDns=true", host)
	}
	return nil
}
