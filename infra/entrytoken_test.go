package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

const testEntryTokenParam = "/waitroom/entry-token-keys:2"

// The functions that sign (enter, position) and verify (order gate) entry
// tokens get the key as a deploy-time SSM reference; admit and admin never.
func TestEntryTokenKeysReachOnlyTheVisitorFunctions(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.EntryTokenKeysSSMParameter, p.EntryTokenIssuer = testEntryTokenParam, "https://queue.shop.example"
	})
	for _, name := range Functions {
		vars := s.fnProps(t, name)["Environment"].(map[string]any)["Variables"].(map[string]any)
		keys, issuer := vars["ENTRY_TOKEN_KEYS"], vars["ENTRY_TOKEN_ISSUER"]
		if servesVisitors(name) {
			if keys != "{{resolve:ssm:"+testEntryTokenParam+"}}" || issuer != "https://queue.shop.example" {
				t.Errorf("%s: ENTRY_TOKEN_KEYS=%v ENTRY_TOKEN_ISSUER=%v", name, keys, issuer)
			}
		} else if keys != nil || issuer != nil {
			t.Errorf("%s sees the entry-token key", name)
		}
	}
	for name, mutate := range map[string]func(*WaitroomProps){
		"bad parameter name":  func(p *WaitroomProps) { p.EntryTokenKeysSSMParameter = "not a name" },
		"issuer without keys": func(p *WaitroomProps) { p.EntryTokenIssuer = "https://x.example" },
	} {
		p := baseProps()
		mutate(&p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), "entryToken") {
			t.Errorf("%s: %v, want an error naming the setting", name, err)
		}
	}
	got := mustProps(t, map[string]any{CtxEntryTokenKeys: testEntryTokenParam, CtxEntryTokenIssuer: "https://i.example"})
	if got.EntryTokenKeysSSMParameter != testEntryTokenParam || got.EntryTokenIssuer != "https://i.example" {
		t.Errorf("props from context: %+v", got)
	}
}
