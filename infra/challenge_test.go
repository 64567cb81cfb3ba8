package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// challengeProps: anonymous visitors who solve a proof of work of bits
// (0: the default difficulty).
func challengeProps(bits int) func(*WaitroomProps) {
	return func(p *WaitroomProps) {
		anonymousProps(p)
		p.Challenge, p.ChallengeBits = waitroom.ChallengePoW, bits
	}
}

// checkChallengeEnv: CHALLENGE and CHALLENGE_BITS reach enter, the one
// function that makes visitors, and no other: position, the order gate,
// admit, admin and the consumer make none.
func checkChallengeEnv(t *testing.T, s *synth, bits int) {
	t.Helper()
	for _, fn := range s.w.Props.FunctionNames() {
		env := s.env(t, fn)
		if fn == FnEnter {
			if env["CHALLENGE"] != string(waitroom.ChallengePoW) || env["CHALLENGE_BITS"] != strconv.Itoa(bits) {
				t.Errorf("enter: CHALLENGE %v, CHALLENGE_BITS %v; want pow and %d", env["CHALLENGE"], env["CHALLENGE_BITS"], bits)
			}
			continue
		}
		if env["CHALLENGE"] != nil || env["CHALLENGE_BITS"] != nil {
			t.Errorf("%s: CHALLENGE %v, CHALLENGE_BITS %v; want neither (it makes no visitor)", fn, env["CHALLENGE"], env["CHALLENGE_BITS"])
		}
	}
}

func TestChallengeGoesToEnterAlone(t *testing.T) {
	checkChallengeEnv(t, synthesize(t, challengeProps(0)), waitroom.DefaultChallengeBits)
	checkChallengeEnv(t, synthesize(t, challengeProps(20)), 20)
	// The solutions are signed with the ticket key, which enter already has.
	s := synthesize(t, challengeProps(18))
	if env := s.env(t, FnEnter); env["TICKET_SECRET"] != "{{resolve:ssm:"+testTicketParam+"}}" || env["ANONYMOUS_VISITORS"] != "true" {
		t.Errorf("enter: TICKET_SECRET %v, ANONYMOUS_VISITORS %v", env["TICKET_SECRET"], env["ANONYMOUS_VISITORS"])
	}
}

// With a broker too, enter checks the solution before it accepts an entry;
// the consumer, which applies accepted entries, never sees one.
func TestChallengeWithABroker(t *testing.T) {
	for _, mode := range []waitroom.Intake{waitroom.IntakeBroker, waitroom.IntakeFallback} {
		s := synthesize(t, func(p *WaitroomProps) {
			challengeProps(0)(p)
			p.Intake = mode
		})
		if _, ok := s.w.Functions[FnIntakeConsumer]; !ok {
			t.Fatalf("%s: no consumer", mode)
		}
		checkChallengeEnv(t, s, waitroom.DefaultChallengeBits)
	}
}

// Off (the default) adds nothing: the functions' own default is off.
func TestNoChallengeByDefault(t *testing.T) {
	for _, s := range []*synth{def(t), synthesize(t, anonymousProps)} {
		for _, fn := range s.w.Props.FunctionNames() {
			if env := s.env(t, fn); env["CHALLENGE"] != nil || env["CHALLENGE_BITS"] != nil {
				t.Errorf("%s: CHALLENGE %v, CHALLENGE_BITS %v without challenge=pow", fn, env["CHALLENGE"], env["CHALLENGE_BITS"])
			}
		}
	}
}

func TestChallengeValidation(t *testing.T) {
	bad := map[string]struct {
		mutate   func(*WaitroomProps)
		settings []string
	}{
		"pow without anonymous visitors": {func(p *WaitroomProps) { p.Challenge = waitroom.ChallengePoW }, []string{CtxChallenge, CtxAnonymous}},
		"pow behind a proxy only": {func(p *WaitroomProps) {
			p.JwtIssuer, p.JwtAudience = "", nil
			p.TrustUserHeaderFromProxy, p.ProxySecretSSMParameter = true, "/waitroom/proxy-secret"
			p.Challenge = waitroom.ChallengePoW
		}, []string{CtxChallenge, CtxAnonymous}},
		"unknown mode":         {func(p *WaitroomProps) { anonymousProps(p); p.Challenge = "captcha" }, []string{CtxChallenge, "captcha"}},
		"upper case":           {func(p *WaitroomProps) { anonymousProps(p); p.Challenge = "POW" }, []string{CtxChallenge}},
		"bits without pow":     {func(p *WaitroomProps) { anonymousProps(p); p.ChallengeBits = 20 }, []string{CtxChallengeBits, CtxChallenge}},
		"bits too high":        {challengeProps(25), []string{CtxChallengeBits, "CHALLENGE_BITS"}},
		"bits negative":        {challengeProps(-1), []string{CtxChallengeBits, "CHALLENGE_BITS"}},
		"bits way beyond hash": {challengeProps(257), []string{CtxChallengeBits}},
	}
	for name, c := range bad {
		p := baseProps()
		c.mutate(&p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		_, err := NewWaitroomStack(app, "Waitroom", p)
		for _, want := range c.settings {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want an error naming %s", name, err, want)
			}
		}
	}
	for _, bits := range []int{1, 24} { // the functions' bounds
		synthesize(t, challengeProps(bits))
	}
}

func TestChallengeFromContext(t *testing.T) {
	got := mustProps(t, map[string]any{CtxAnonymous: "true", CtxChallenge: "pow", CtxChallengeBits: float64(20)})
	if got.Challenge != waitroom.ChallengePoW || got.ChallengeBits != 20 {
		t.Errorf("challenge props from context: %q, %d", got.Challenge, got.ChallengeBits)
	}
	if got := mustProps(t, map[string]any{}).WithDefaults("Waitroom"); got.Challenge != waitroom.ChallengeOff || got.ChallengeBits != 0 {
		t.Errorf("default challenge: %q, %d; want off and no bits", got.Challenge, got.ChallengeBits)
	}
	if got := mustProps(t, map[string]any{CtxChallenge: "pow"}).WithDefaults("Waitroom"); got.ChallengeBits != waitroom.DefaultChallengeBits {
		t.Errorf("challenge=pow: bits %d, want %d", got.ChallengeBits, waitroom.DefaultChallengeBits)
	}
	if _, err := propsFromContext(mapContext{CtxChallengeBits: "hard"}); err == nil || !strings.Contains(err.Error(), CtxChallengeBits) {
		t.Errorf("challengeBits=hard: %v, want an error naming it", err)
	}
}

// A cross-origin page may send a new visitor's solution, the receipt of
// an entry the broker accepted (the page sends it to position), and an
// account user's signed place (X-Queue-Place, issue 36).
func TestCorsAllowsTheVisitorHeaders(t *testing.T) {
	apis := def(t).resources("AWS::ApiGatewayV2::Api")
	api := props(apis[onlyKey(t, apis, "")])
	headers := js(api["CorsConfiguration"].(map[string]any)["AllowHeaders"])
	for _, h := range []string{"x-queue-challenge", "x-queue-receipt", "x-queue-ticket", "x-queue-place"} {
		if !strings.Contains(headers, `"`+h+`"`) {
			t.Errorf("CORS AllowHeaders %s: want %s", headers, h)
		}
	}
	if strings.ToLower(waitroom.ChallengeHeader) != "x-queue-challenge" || strings.ToLower(waitroom.ReceiptHeader) != "x-queue-receipt" {
		t.Errorf("headers renamed: %s, %s", waitroom.ChallengeHeader, waitroom.ReceiptHeader)
	}
}
