package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

const (
	testEntryTokenParam       = "/waitroom/entry-token-keys:2"
	testEntryTokenPublicParam = "/waitroom/entry-token-public-keys:2"
)

// signedTokens: entry tokens signed as JWTs, the seeds and their public
// keys each in a parameter of their own.
func signedTokens(p *WaitroomProps) {
	p.EntryTokenKeysSSMParameter, p.EntryTokenPublicKeysSSMParameter = testEntryTokenParam, testEntryTokenPublicParam
	p.EntryTokenIssuer = "https://queue.shop.example"
}

// entryTokenVars are the entry-token variables a function's environment holds.
func entryTokenVars(vars map[string]any) map[string]any {
	out := map[string]any{}
	for _, name := range []string{"ENTRY_TOKEN_KEYS", "ENTRY_TOKEN_PUBLIC_KEYS", "ENTRY_TOKEN_ISSUER"} {
		if v, ok := vars[name]; ok {
			out[name] = v
		}
	}
	return out
}

// wantEntryTokenVars is what fn may hold: the seeds where tokens are
// signed (position, which answers READY; enter, unless it only hands the
// broker receipts), the public keys where they are only verified (the
// order gate), nothing elsewhere; the issuer beside either.
func wantEntryTokenVars(p WaitroomProps, fn string) map[string]any {
	want := map[string]any{}
	if p.EntryTokenKeysSSMParameter == "" {
		return want
	}
	switch {
	case fn == FnPosition, fn == FnEnter && p.Intake != waitroom.IntakeBroker:
		want["ENTRY_TOKEN_KEYS"] = "{{resolve:ssm:" + p.EntryTokenKeysSSMParameter + "}}"
	case fn == FnOrderGate:
		want["ENTRY_TOKEN_PUBLIC_KEYS"] = "{{resolve:ssm:" + p.EntryTokenPublicKeysSSMParameter + "}}"
	default:
		return want
	}
	if p.EntryTokenIssuer != "" {
		want["ENTRY_TOKEN_ISSUER"] = p.EntryTokenIssuer
	}
	return want
}

// Keys only where they are used, in every documented configuration and in
// each intake mode: the seed reaches the functions that sign and no other
// (not the order gate, which verifies and has a way out of the VPC; not
// enter behind the broker, which signs receipts only), the public keys the
// gate alone.
func TestEntryTokenKeysOnlyWhereUsed(t *testing.T) {
	stacks := map[string]*synth{}
	_, documented := documentedConfigurations(t)
	for name, s := range documented {
		stacks[name] = s
	}
	for _, mode := range []waitroom.Intake{waitroom.IntakeDirect, waitroom.IntakeBroker, waitroom.IntakeFallback} {
		stacks["signed, intake "+string(mode)] = synthesize(t, func(p *WaitroomProps) {
			signedTokens(p)
			p.Intake = mode
			if mode != waitroom.IntakeDirect {
				p.TicketSecretSSMParameter = testTicketParam
			}
		})
	}
	signed := 0
	for name, s := range stacks {
		if s.w.Props.EntryTokenKeysSSMParameter != "" {
			signed++
		}
		for fn := range s.w.Functions {
			got, want := entryTokenVars(s.env(t, fn)), wantEntryTokenVars(s.w.Props, fn)
			if js(got) != js(want) {
				t.Errorf("%s, %s: %s, want %s", name, fn, js(got), js(want))
			}
		}
	}
	if signed < 5 {
		t.Errorf("only %d stacks sign entry tokens: the documented configurations should include more than one", signed)
	}
}

// The seeds and their public keys come together, each a parameter name;
// an issuer without keys signs nothing.
func TestEntryTokenParametersAreRefusedAlone(t *testing.T) {
	for name, c := range map[string]struct {
		mutate  func(*WaitroomProps)
		setting string
	}{
		"bad parameter name":       {func(p *WaitroomProps) { signedTokens(p); p.EntryTokenKeysSSMParameter = "not a name" }, "entryTokenKeysSsmParameter"},
		"bad public name":          {func(p *WaitroomProps) { signedTokens(p); p.EntryTokenPublicKeysSSMParameter = "not a name" }, "entryTokenPublicKeysSsmParameter"},
		"seeds without public":     {func(p *WaitroomProps) { signedTokens(p); p.EntryTokenPublicKeysSSMParameter = "" }, "entryTokenPublicKeysSsmParameter"},
		"public keys without seed": {func(p *WaitroomProps) { signedTokens(p); p.EntryTokenKeysSSMParameter = "" }, "entryTokenKeysSsmParameter"},
		"issuer without keys":      {func(p *WaitroomProps) { p.EntryTokenIssuer = "https://x.example" }, "entryTokenKeysSsmParameter"},
	} {
		p := baseProps()
		c.mutate(&p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), c.setting) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.setting)
		}
	}
	got := mustProps(t, map[string]any{CtxEntryTokenKeys: testEntryTokenParam, CtxEntryTokenPublicKeys: testEntryTokenPublicParam,
		CtxEntryTokenIssuer: "https://i.example"})
	if got.EntryTokenKeysSSMParameter != testEntryTokenParam || got.EntryTokenPublicKeysSSMParameter != testEntryTokenPublicParam ||
		got.EntryTokenIssuer != "https://i.example" {
		t.Errorf("props from context: %+v", got)
	}
}
