package main

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/cacheacl"
)

// Issue 32, "least privilege to the last key": what each function may
// read, reach and be reached by, on the synthesized templates.

// The order gate, the one function with a way out of the VPC, holds the
// ticket key only where it verifies tickets: with anonymous visitors. With
// a broker (receipts are signed by enter and checked by position) or any
// other identity it never reads one, and without another secret its role
// may not use KMS at all.
func TestOrderGateHoldsTheTicketKeyOnlyWhereItVerifiesTickets(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	stacks["fallback with a proxy"] = synthesize(t, func(p *WaitroomProps) {
		p.JwtIssuer, p.JwtAudience = "", nil
		p.TrustUserHeaderFromProxy, p.ProxySecretSSMParameter = true, "/waitroom/proxy-secret:1"
		p.Intake, p.TicketSecretSSMParameter = waitroom.IntakeFallback, testTicketParam
	})
	checked := 0
	for name, s := range stacks {
		env := s.env(t, FnOrderGate)
		_, holds := env["TICKET_SECRET"]
		if want := s.w.Props.AnonymousVisitors; holds != want {
			t.Errorf("%s: the order gate holds TICKET_SECRET: %v, want %v (it verifies tickets only with anonymous visitors)", name, holds, want)
		}
		if s.w.Props.TicketSecretSSMParameter != "" && !s.w.Props.AnonymousVisitors {
			checked++
			if kms := roleKMSStatements(s, js(s.fnProps(t, FnOrderGate)["Role"])); !holdsSecretVar(env) && len(kms) != 0 {
				t.Errorf("%s: the order gate holds no secret, yet its role may use KMS: %s", name, js(kms))
			}
			for _, fn := range []string{FnEnter, FnPosition} { // they sign and check the receipts
				if _, ok := s.env(t, fn)["TICKET_SECRET"]; !ok {
					t.Errorf("%s: %s lacks TICKET_SECRET", name, fn)
				}
			}
		}
	}
	if checked < 3 {
		t.Errorf("only %d stacks hold a ticket key without anonymous visitors", checked)
	}
}

// ingress lists the sources (as JSON) of a security group's inbound rules,
// wherever the template writes them (inline or as
// AWS::EC2::SecurityGroupIngress), with their ports.
func (s *synth) ingress(sg string) []egressRule {
	var out []egressRule
	add := func(r map[string]any) {
		from := ""
		for _, k := range []string{"CidrIp", "CidrIpv6", "SourcePrefixListId", "SourceSecurityGroupId"} {
			if v, ok := r[k]; ok {
				from = js(v)
			}
		}
		first, _ := r["FromPort"].(float64)
		last, _ := r["ToPort"].(float64)
		out = append(out, egressRule{from, first, last})
	}
	if r, ok := s.resources("AWS::EC2::SecurityGroup")[sg]; ok {
		for _, e := range asSlice(props(r)["SecurityGroupIngress"]) {
			add(e.(map[string]any))
		}
	}
	for _, r := range s.resources("AWS::EC2::SecurityGroupIngress") {
		if p := props(r); js(p["GroupId"]) == js(map[string]any{"Fn::GetAtt": []any{sg, "GroupId"}}) {
			add(p)
		}
	}
	return out
}

// The SQS interface endpoint admits enter's security group alone, on 443:
// not the VPC's range (CDK's default for an interface endpoint), which
// would let every function, the order gate among them, send to the queue's
// endpoint.
func TestSQSEndpointAdmitsEnterAlone(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	for _, name := range []string{"broker", "fallback"} {
		s := stacks[name]
		fromEnter := js(map[string]any{"Fn::GetAtt": []any{s.sgOf(t, FnEnter), "GroupId"}})
		for _, r := range s.interfaceEndpoints() {
			sgs := asSlice(props(r)["SecurityGroupIds"])
			if len(sgs) != 1 {
				t.Fatalf("%s: the endpoint has %d security groups, want 1", name, len(sgs))
			}
			got := s.ingress(sgs[0].(map[string]any)["Fn::GetAtt"].([]any)[0].(string))
			if len(got) != 1 || got[0] != (egressRule{fromEnter, 443, 443}) {
				t.Errorf("%s: the SQS endpoint admits %+v, want only enter's group (%s) on 443", name, got, fromEnter)
			}
		}
	}
}

// Each function logs in to the cache as a user of its own, whose access
// string is internal/cacheacl's for it (proven against a real server
// there), and its role may connect as that user alone: a function's
// credentials never reach another function's keys or commands. No user
// has every key or every command.
func TestEveryFunctionHasItsOwnCacheUser(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	for name, s := range stacks {
		users := map[string]map[string]any{} // by UserId
		ref := map[string]string{}           // logical id -> UserId
		for id, r := range s.resources("AWS::ElastiCache::User") {
			p := props(r)
			users[p["UserId"].(string)], ref[id] = p, p["UserId"].(string)
			if acl := p["AccessString"].(string); p["UserName"] != "default" && (strings.Contains(acl, "~* ") || strings.Contains(acl, "+@all") || strings.Contains(acl, "allkeys")) {
				t.Errorf("%s: user %s has every key or command: %s", name, p["UserId"], acl)
			}
		}
		fns := s.w.Props.FunctionNames()
		if len(users) != len(fns)+1 {
			t.Errorf("%s: %d cache users, want one per function (%d) and the default", name, len(users), len(fns))
		}
		seen := map[string]string{}
		for _, fn := range fns {
			id, _ := s.env(t, fn)["REDIS_IAM_USER"].(string)
			if other, dup := seen[id]; dup {
				t.Errorf("%s: %s and %s share the cache user %s", name, fn, other, id)
			}
			seen[id] = fn
			u := users[id]
			acl, _ := cacheacl.AccessString(fn)
			if id != s.w.Props.NamePrefix+"-"+cacheacl.Grants[fn].UserSuffix || u == nil || u["UserName"] != id ||
				js(u["AuthenticationMode"]) != `{"Type":"iam"}` || u["AccessString"] != acl {
				t.Errorf("%s, %s: REDIS_IAM_USER %q, user %s; want IAM auth, user name = id, access %q", name, fn, id, js(u), acl)
			}
			var userID string
			for lid, uid := range ref {
				if uid == id {
					userID = lid
				}
			}
			connect := s.statement(t, fn, "ConnectToCacheWithIAM")
			resources := asSlice(connect["Resource"])
			if len(resources) != 2 || js(resources[1]) != js(map[string]any{"Fn::GetAtt": []any{userID, "Arn"}}) {
				t.Errorf("%s, %s: may connect as %s, want its own user %s alone", name, fn, js(connect["Resource"]), userID)
			}
		}
		for _, g := range s.resources("AWS::ElastiCache::UserGroup") {
			if n := len(asSlice(props(g)["UserIds"])); n != len(users) {
				t.Errorf("%s: the user group holds %d users, want all %d", name, n, len(users))
			}
		}
	}
}
