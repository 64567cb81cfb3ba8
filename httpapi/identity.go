package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// Who is asking is decided here, and only here (docs/API.md, "Who is
// asking"; docs/security.md): the sources below are tried in order and the
// first that names the caller wins; with none, an enter may make a new
// visitor. Each source has a namespace of its own in the store, so that no
// source can claim an id of another: X-User-Id: v-… is not that visitor.

// Source is where an identity comes from.
type Source string

const (
	FromAuthorizer Source = "authorizer" // the JWT authorizer's sub, or a Lambda authorizer's userId
	FromHeader     Source = "header"     // X-User-Id from the operator's proxy
	FromTicket     Source = "ticket"     // a queue ticket: a visitor made here before
	NewVisitor     Source = "visitor"    // a visitor made by this enter
)

// Identity is who a request comes from.
type Identity struct {
	Source Source
	ID     string // as its source gave it: what the order API and the entry token's sub see
	User   string // the store's user: ID in its source's namespace
	// ByReceipt: known only by the broker's receipt, which proves an entry,
	// not the holder: it is never given a ticket.
	ByReceipt bool
	// TicketIssued is the first issue of the visitor's ticket, which its
	// renewals keep (zero for a new visitor).
	TicketIssued time.Time
	// Address is where the request comes from, as the limiter counts it:
	// API Gateway's sourceIp (the local runner: the remote address), or,
	// behind CloudFront (ORIGIN_SECRET), the viewer's address.
	Address string
	// Challenge is a new visitor's solved challenge (CHALLENGE=pow), which
	// its enter spends; zero otherwise.
	Challenge waitroom.ChallengeSpend
	// Spot is the caller's place in a room's line as its credential
	// carries it: a visitor's ticket, an account's X-Queue-Place or
	// wr_place cookie (zero: none, or one that does not verify for this
	// account). Polls that carry it are answered from the room's view.
	Spot waitroom.Spot
}

// Ticketed: a visitor, whose answers renew its queue ticket. A signed-in
// user gets none: a ticket would outlive the sign-in it came from.
func (i Identity) Ticketed() bool {
	return (i.Source == FromTicket || i.Source == NewVisitor) && !i.ByReceipt
}

// namespaces of the store's users, by source. Visitor ids are made here,
// "v-" and 22 characters, which neither prefix below can begin.
var namespaces = map[Source]string{FromAuthorizer: "a:", FromHeader: "h:", FromTicket: "", NewVisitor: ""}

// HeaderUser is the store's user of a request whose X-User-Id is id (with
// TRUST_USER_HEADER): what an admission batch names it by.
func HeaderUser(id string) string { return namespaces[FromHeader] + id }

func identityOf(s Source, id string) Identity {
	return Identity{Source: s, ID: id, User: namespaces[s] + id}
}

// byReceipt is the identity whose entry a receipt names (a store user):
// its namespace gives its source.
func byReceipt(user string) Identity {
	who := identityOf(FromTicket, user)
	for _, s := range []Source{FromAuthorizer, FromHeader} {
		if id, ok := strings.CutPrefix(user, namespaces[s]); ok {
			who = identityOf(s, id)
		}
	}
	who.ByReceipt = true
	return who
}

// identitySources, in the order they are believed.
var identitySources = []func(a *API, req events.APIGatewayV2HTTPRequest) (who Identity, found bool, err error){
	(*API).fromAuthorizer,
	(*API).fromHeader,
	(*API).fromTicket,
}

// caller returns who sends an enter (create) or position request, and its room.
func (a *API) caller(req events.APIGatewayV2HTTPRequest, create bool) (who Identity, room string, err error) {
	if _, err := url.ParseQuery(req.RawQueryString); err != nil {
		// Never read a query that cannot be decoded as "no room": the user
		// would land in another room's line.
		return Identity{}, "", waitroom.Errorf(waitroom.EInvalidRequest, "the query string cannot be decoded")
	}
	room, ok := req.QueryStringParameters["room"]
	if !ok {
		room = waitroom.DefaultRoom
	} else if !waitroom.ValidRoom(room) {
		return Identity{}, "", waitroom.Errorf(waitroom.EInvalidRoom, "room must match ^[a-z0-9][a-z0-9-]{0,63}$")
	}
	enterRoom := ""
	if create {
		enterRoom = room
	}
	if who, err = a.Identify(req, enterRoom); err != nil {
		return Identity{}, "", err
	}
	return who, room, nil
}

// Caller is who sends a position-like request (the live stream) and its room.
func (a *API) Caller(req events.APIGatewayV2HTTPRequest) (Identity, string, error) {
	return a.caller(req, false)
}

// Identify returns who sends req and from where. With no source, an enter
// into enterRoom ("" for every other request, which never makes one) with
// anonymous visitors on makes a new visitor, once it has shown a solved
// challenge when CHALLENGE=pow (a challenge_required error otherwise). A
// ticket that does not verify is an invalid_ticket error and creates nothing.
func (a *API) Identify(req events.APIGatewayV2HTTPRequest, enterRoom string) (Identity, error) {
	address, err := a.address(req)
	if err != nil {
		return Identity{}, err
	}
	for _, from := range identitySources {
		who, found, err := from(a, req)
		if err == nil && found {
			err = waitroom.CheckUser(who.ID)
		}
		if err != nil || found {
			who.Address = address
			if who.Source != FromTicket {
				who.Spot = a.accountSpot(req, who.User)
			}
			return who, err
		}
	}
	v := a.Config.Visitor
	if enterRoom == "" || !v.Anonymous || !v.Tickets.Enabled() {
		return Identity{}, waitroom.Errorf(waitroom.EUnauthenticated, "sign in first: no user identity on this request")
	}
	solved, err := a.solvedChallenge(req, enterRoom)
	if err != nil {
		return Identity{}, err
	}
	id, err := waitroom.NewVisitorID()
	if err != nil {
		return Identity{}, waitroom.Unavailable(err)
	}
	who := identityOf(NewVisitor, id)
	who.Address, who.Challenge = address, solved
	return who, nil
}

// originSecretHeader carries ORIGIN_SECRET from CloudFront (an origin
// custom header); viewerAddressHeader is CloudFront's word on the viewer.
const (
	originSecretHeader  = "X-Origin-Secret"
	viewerAddressHeader = "CloudFront-Viewer-Address"
)

// address is where req comes from. With ORIGIN_SECRET a request must carry
// it (it came through CloudFront, which adds it and forwards
// CloudFront-Viewer-Address, "<ip>:<port>"): else 403 forbidden; the
// viewer's address is believed then and only then, and one that is not an
// address is 400 invalid_request (never counted under no address).
// Without, API Gateway's sourceIp (the local runner: the peer's), or the
// client a trusted proxy reports for it (TRUSTED_PROXIES: forwardedClient);
// never X-Forwarded-For from anyone else: any client can write it.
func (a *API) address(req events.APIGatewayV2HTTPRequest) (string, error) {
	peer := req.RequestContext.HTTP.SourceIP
	if a.Config.OriginSecret != "" {
		return a.cloudFrontViewer(req, peer)
	}
	reports := map[string]string{}
	for _, h := range clientHeaders {
		if v, ok := lookupHeader(req, h.name); ok {
			reports[h.name] = v
		}
	}
	return a.forwardedClient(peer, reports)
}

// cloudFrontViewer is the viewer's address of a request that came through
// CloudFront (ORIGIN_SECRET), whose peer is peer.
func (a *API) cloudFrontViewer(req events.APIGatewayV2HTTPRequest, peer string) (string, error) {
	if !secretEqual(req, originSecretHeader, a.Config.OriginSecret) {
		return "", waitroom.Errorf(waitroom.EForbidden, "requests come through the waiting room's site, not to its API directly")
	}
	viewer, ok := lookupHeader(req, viewerAddressHeader)
	if !ok {
		return peer, nil
	}
	addr, ok := viewerAddress(viewer)
	if !ok {
		return "", waitroom.Errorf(waitroom.EInvalidRequest, "CloudFront-Viewer-Address is not an IP address and port, so this request cannot be counted by its viewer")
	}
	return addr, nil
}

// secretEqual reports whether req's header name equals secret. Both sides
// are hashed first, so that the comparison takes the same time whatever
// the length or content of what was sent; a missing header never matches.
func secretEqual(req events.APIGatewayV2HTTPRequest, name string, secret waitroom.Secret) bool {
	sent, ok := lookupHeader(req, name)
	want := sha256.Sum256([]byte(secret))
	got := sha256.Sum256([]byte(sent))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && ok
}

// lookupHeader is req's header name, whatever the case of its name.
func lookupHeader(req events.APIGatewayV2HTTPRequest, name string) (string, bool) {
	if v, ok := req.Headers[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range req.Headers { // payload 2.0 lowercases names; tolerate other hosts
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

func header(req events.APIGatewayV2HTTPRequest, name string) string {
	v, _ := lookupHeader(req, name)
	return v
}

// forwardHeaders are the caller's headers the order API sees besides the
// gate's own: Authorization, so that the shop can still authenticate the
// buyer, and those the operator lists in ORDER_FORWARD_HEADERS.
func (a *API) forwardHeaders(req events.APIGatewayV2HTTPRequest) http.Header {
	h := http.Header{}
	for _, name := range append([]string{"Authorization"}, a.Config.Visitor.ForwardHeaders...) {
		if v, ok := lookupHeader(req, name); ok {
			h.Set(name, v)
		}
	}
	return h
}

// fromAuthorizer is the JWT claim sub, else a Lambda authorizer's userId.
func (a *API) fromAuthorizer(req events.APIGatewayV2HTTPRequest) (Identity, bool, error) {
	auth := req.RequestContext.Authorizer
	switch {
	case auth == nil:
		return Identity{}, false, nil
	case auth.JWT != nil && auth.JWT.Claims["sub"] != "":
		return identityOf(FromAuthorizer, auth.JWT.Claims["sub"]), true, nil
	}
	v, ok := auth.Lambda["userId"]
	if !ok || v == nil {
		return Identity{}, false, nil
	}
	s, isString := v.(string)
	if !isString {
		return Identity{}, false, waitroom.Errorf(waitroom.EInvalidUser, "the authorizer's userId must be a string")
	}
	return identityOf(FromAuthorizer, s), true, nil
}

// proxySecretHeader carries PROXY_SECRET from the trusted proxy.
const proxySecretHeader = "X-Proxy-Secret"

// fromHeader is X-User-Id when TRUST_USER_HEADER is on and, with PROXY_SECRET
// (which every process open to a network has: envconfig.Load), the request
// carries the secret. Without PROXY_SECRET (a local runner on loopback,
// where only this machine can send it), a request relayed by a proxy
// (relayHeaders) may come from anyone: its X-User-Id is 403 forbidden.
func (a *API) fromHeader(req events.APIGatewayV2HTTPRequest) (Identity, bool, error) {
	if !a.Config.TrustUserHeader {
		return Identity{}, false, nil
	}
	if a.Config.ProxySecret != "" && !secretEqual(req, proxySecretHeader, a.Config.ProxySecret) {
		return Identity{}, false, nil
	}
	id, ok := lookupHeader(req, "X-User-Id")
	if via := relayed(req); ok && via != "" && a.Config.ProxySecret == "" {
		return Identity{}, false, waitroom.Errorf(waitroom.EForbidden, "X-User-Id came through a proxy (the request carries %s), and without PROXY_SECRET this server believes it only from its own machine: "+
			"set PROXY_SECRET and have the proxy send it as X-Proxy-Secret (dropping clients' X-User-Id), or reach the server directly", via)
	}
	return identityOf(FromHeader, id), ok, nil
}

// fromTicket is the visitor of the queue ticket a request carries: the
// header wins over the cookie, because a page that holds a newer ticket
// than its cookie sends it.
func (a *API) fromTicket(req events.APIGatewayV2HTTPRequest) (Identity, bool, error) {
	t, ok := lookupHeader(req, waitroom.TicketHeader)
	if !ok || t == "" {
		t, ok = ticketCookie(req)
	}
	if !ok {
		return Identity{}, false, nil
	}
	ticket, err := a.Config.Visitor.Tickets.Verify(t, a.now())
	if err != nil {
		return Identity{}, false, err
	}
	who := identityOf(FromTicket, ticket.Visitor)
	who.TicketIssued, who.Spot = ticket.IssuedAt, ticket.Spot
	return who, true, nil
}

// accountSpot is the place an account's request carries (X-Queue-Place,
// else the wr_place cookie) when it verifies for user; else none. A place
// that does not verify is no error: it only spares a store call, and the
// store still knows the account's place.
func (a *API) accountSpot(req events.APIGatewayV2HTTPRequest, user string) waitroom.Spot {
	place, ok := lookupHeader(req, waitroom.PlaceHeader)
	if !ok || place == "" {
		place, ok = cookie(req, waitroom.PlaceCookie)
	}
	if !ok || !a.Config.Visitor.Tickets.Enabled() {
		return waitroom.Spot{}
	}
	spot, err := a.Config.Visitor.Tickets.VerifyPlace(place, user, a.now())
	if err != nil {
		return waitroom.Spot{}
	}
	return spot
}

func ticketCookie(req events.APIGatewayV2HTTPRequest) (string, bool) {
	return cookie(req, waitroom.TicketCookie)
}

// cookie is req's cookie name, when it has a value.
func cookie(req events.APIGatewayV2HTTPRequest, name string) (string, bool) {
	cookies := req.Cookies
	if len(cookies) == 0 { // hosts that leave the Cookie header alone
		cookies = strings.Split(header(req, "Cookie"), ";")
	}
	for _, c := range cookies {
		n, value, _ := strings.Cut(strings.TrimSpace(c), "=")
		if n == name && value != "" {
			return value, true
		}
	}
	return "", false
}

// solvedChallenge is the solved challenge an enter into room must carry to
// make a visitor with CHALLENGE=pow (zero with off): the header's solution,
// verified, as the store is to spend it. Without one, or with one that does
// not verify, the error is challenge_required with a fresh challenge.
func (a *API) solvedChallenge(req events.APIGatewayV2HTTPRequest, room string) (waitroom.ChallengeSpend, error) {
	v := a.Config.Visitor
	if v.Challenge != waitroom.ChallengePoW {
		return waitroom.ChallengeSpend{}, nil
	}
	solution, ok := lookupHeader(req, waitroom.ChallengeHeader)
	if !ok || solution == "" {
		return waitroom.ChallengeSpend{}, a.challengeRequired(room, nil)
	}
	now := a.now()
	c, err := v.Tickets.VerifySolution(solution, room, a.challengeBits(), now)
	if err != nil {
		return waitroom.ChallengeSpend{}, a.challengeRequired(room, err)
	}
	return waitroom.ChallengeSpend{Nonce: c.Nonce, TTL: c.ExpiresAt.Sub(now)}, nil
}

// challengeRequired is the answer to an enter into room that must solve a
// challenge first: a fresh one, valid for ChallengeTTL. cause says why the
// solution it sent was refused (nil: it sent none).
func (a *API) challengeRequired(room string, cause error) error {
	c, err := a.Config.Visitor.Tickets.NewChallenge(room, a.challengeBits(), a.now().Add(waitroom.ChallengeTTL))
	if err != nil { // no randomness: nothing else would work either
		return waitroom.Unavailable(err)
	}
	var e *waitroom.Error
	if !errors.As(cause, &e) { // else the store's refusal of a spent solution, as it said it
		e = waitroom.ChallengeRequired(cause)
	}
	return &challengeError{err: e, challenge: c}
}

// CallerError answers a request whose caller or room is not acceptable; an
// invalid ticket also clears the cookie, so that the page's rejoin starts
// afresh.
func CallerError(err error) events.APIGatewayV2HTTPResponse {
	resp := ErrorResponse(err)
	if waitroom.ErrorCode(err) == waitroom.EInvalidTicket {
		resp.Cookies = append(resp.Cookies, waitroom.TicketClearCookie())
	}
	return resp
}
