package main

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/infra/cost"
)

// IdleBudgetUSD is what the deployed stack may cost a month with the
// sale's rooms created and nobody visiting (issue 9: the Valkey storage
// minimum is the floor; issue 23: three created rooms). A stack whose
// functions hold secrets adds the key that keeps them out of
// GetFunctionConfiguration (issue 19): SecretsBudgetUSD.
const (
	IdleBudgetUSD    = 12.0
	SecretsBudgetUSD = IdleBudgetUSD + 1.5
)

var pricedOnce struct {
	sync.Once
	by  map[string]cost.Priced
	err error
}

// pricedConfigurations are the documented configurations priced with the
// model's defaults, as the documents are.
func pricedConfigurations(t *testing.T) map[string]cost.Priced {
	t.Helper()
	confs, _ := documentedConfigurations(t)
	pricedOnce.Do(func() {
		pricedOnce.by = map[string]cost.Priced{}
		for _, c := range confs {
			pc, err := cost.PriceConfiguration(c, documented.dir, cost.DefaultOptions)
			if err != nil {
				pricedOnce.err = err
				return
			}
			pricedOnce.by[c.Name] = pc
		}
	})
	if pricedOnce.err != nil {
		t.Fatal(pricedOnce.err)
	}
	return pricedOnce.by
}

// Idle, with three created rooms and nobody in them, stays within the
// budget in every configuration without an hourly network item or nodes
// (not nat, broker and fallback, whose NAT gateway or SQS endpoint is billed
// by the hour: TestIntakeOnTheStack prices the endpoint).
func TestIdleBudget(t *testing.T) {
	by := pricedConfigurations(t)
	for _, name := range []string{"default", "private-peering", "ipv6", "page"} {
		r, budget := by[name].R, IdleBudgetUSD
		if by[name].Inv.KMSKeys > 0 {
			budget = SecretsBudgetUSD
		}
		if r.IdleRooms != cost.DefaultIdleRooms || r.IdleMonthlyUSD > budget {
			t.Errorf("%s: idle $%.2f a month with %d rooms, over the $%.2f budget or not %d rooms", name, r.IdleMonthlyUSD, r.IdleRooms,
				budget, cost.DefaultIdleRooms)
		}
		// Enter, at least one poll (the page's: the claim near its turn)
		// and an order.
		if r.RequestsPerVisitor < 3 {
			t.Errorf("%s: %d requests a visitor: enter, at least one poll and an order make 3", name, r.RequestsPerVisitor)
		}
	}
}

// With anonymous visitors the stack also serves the waiting page through
// CloudFront: no idle cost worth a cent, every API request and line fetch
// billed by CloudFront as well, at the rates of where the visitors are.
// The page follows the cached line (issue 36): a 30-minute wait costs at
// most 4 function calls, where polling its position by the default tiers
// cost 32.
func TestPageOnTheStack(t *testing.T) {
	by := pricedConfigurations(t)
	page, def := by["page"], by["default"]
	key := cost.USEast1.KMSKeyMonth.USD // its secrets' key (TestSecretsAreEncryptedWithTheStacksKey)
	if page.R.IdleMonthlyUSD-def.R.IdleMonthlyUSD-key > 0.01 {
		t.Errorf("idle with the page $%.4f, without $%.4f: the page should add its secrets' key and under a cent", page.R.IdleMonthlyUSD, def.R.IdleMonthlyUSD)
	}
	cloudFront := func(pc cost.Priced) (usd float64) {
		for _, it := range pc.R.PerMillion {
			if strings.HasPrefix(it.Name, "CloudFront") {
				usd += it.USD
			}
		}
		return usd
	}
	if page.M.Walk.LineFetches == 0 || def.M.Walk.LineFetches != 0 {
		t.Errorf("line fetches a visitor: page %d, default %d; want some with the page, none without (clients poll)", page.M.Walk.LineFetches,
			def.M.Walk.LineFetches)
	}
	if want := float64(cost.Visitors*(page.R.RequestsPerVisitor+page.M.Walk.LineFetches)) * cost.CloudFrontRegions[0].HTTPSRequest.USD; cloudFront(page) < want {
		t.Errorf("CloudFront per million visitors $%.2f, less than its requests and line fetches alone ($%.2f)", cloudFront(page), want)
	}
	long := page.Opt
	long.WaitSeconds = 1800
	if pc, err := page.With(long); err != nil || pc.R.RequestsPerVisitor > 4 {
		t.Errorf("a 30-minute wait through the page: %d function calls a visitor (%v), want at most 4", pc.R.RequestsPerVisitor, err)
	}
	if _, ok := cost.LineUSD(page.R.PerMillion, "API Gateway CORS preflights"); ok || page.R.PriceClass != "PriceClass_200" {
		t.Errorf("the page is same-origin (no preflights) and served with PriceClass_200: %+v", page.R)
	}
	opt := page.Opt
	opt.Viewers = "korea"
	korea, err := page.With(opt)
	if err != nil {
		t.Fatal(err)
	}
	if cloudFront(korea) <= cloudFront(page) {
		t.Errorf("CloudFront for visitors in Korea $%.2f, not more than in the US ($%.2f)", cloudFront(korea), cloudFront(page))
	}
}

// The edge rate rule on the stack (configuration page-edge against page):
// idle, the web ACL and its one rule by the month; per visitor, every
// request through CloudFront inspected once; nothing else changes.
func TestEdgeRuleOnTheStack(t *testing.T) {
	by := pricedConfigurations(t)
	edge, page := by["page-edge"], by["page"]
	p := cost.USEast1
	if got, want := edge.R.IdleMonthlyUSD-page.R.IdleMonthlyUSD, p.WAFWebACLMonth.USD+p.WAFRuleMonth.USD; math.Abs(got-want) > 1e-9 {
		t.Errorf("the edge rule adds $%.4f a month idle, want the web ACL and its rule, $%.2f", got, want)
	}
	inspected, ok := cost.LineUSD(edge.R.PerMillion, "AWS WAF requests (edge rate rule)")
	cloudFront, _ := cost.LineUSD(page.R.PerMillion, "CloudFront HTTPS requests")
	requests := cloudFront / cost.CloudFrontRegions[0].HTTPSRequest.USD // every request CloudFront takes
	if want := requests * p.WAFRequest.USD; !ok || math.Abs(inspected-want) > 1e-6 {
		t.Errorf("AWS WAF per million visitors $%.4f (listed: %v), want %.0f requests × $%.2f a million", inspected, ok, requests, p.WAFRequest.USD*1e6)
	}
	if got := edge.R.PerMillionUSD - page.R.PerMillionUSD; math.Abs(got-inspected) > 1e-6 {
		t.Errorf("per million the edge rule changes $%.4f, want its inspected requests alone ($%.4f)", got, inspected)
	}
}

// The intake modes on the stack: both add the SQS interface endpoint (enter
// sends from the VPC, where it reaches the store); broker adds the queue's
// idle polling and two alarm metrics (the dead letters, the consumer's
// throttles), and prices SQS per visitor.
func TestIntakeOnTheStack(t *testing.T) {
	by := pricedConfigurations(t)
	def, broker, fallback := by["default"].R, by["broker"].R, by["fallback"].R
	key := cost.USEast1.KMSKeyMonth.USD // the ticket key's (receipts): TestSecretsAreEncryptedWithTheStacksKey
	const endpoint = 2 * 730 * 0.01     // two AZs, by the hour
	for name, r := range map[string]cost.Report{"broker": broker, "fallback": fallback} {
		if usd, ok := cost.LineUSD(r.Idle, "VPC interface endpoint sqs"); !ok || math.Abs(usd-endpoint) > 1e-9 {
			t.Errorf("%s: SQS endpoint $%v (found %v), want $14.60", name, usd, ok)
		}
	}
	if extra := broker.IdleMonthlyUSD - def.IdleMonthlyUSD - key - endpoint; extra < 0.3 || extra > 1 {
		t.Errorf("broker adds $%.4f a month idle besides its key and the endpoint, want the polling and three alarm metrics (about $0.63)", extra)
	}
	if _, ok := cost.LineUSD(broker.PerMillion, "SQS requests (intake)"); !ok {
		t.Error("broker: no SQS requests per visitor")
	}
	// The same line items as direct, but the key's Decrypts at cold starts:
	// compared to the cent, as the report rounds.
	decrypts, _ := cost.LineUSD(fallback.PerMillion, "KMS requests (environment key)")
	if math.Abs(fallback.PerMillionUSD-decrypts-def.PerMillionUSD) > 0.01 {
		t.Errorf("fallback per million $%.4f, direct $%.4f: the broker is priced only for an outage's enters", fallback.PerMillionUSD, def.PerMillionUSD)
	}
}
