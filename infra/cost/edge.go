package cost

import (
	"fmt"
	"strings"
)

// edgeIdleItems: the web ACL of edgeRateLimit and its rules, by the month.
func edgeIdleItems(inv Inventory, p Prices) []Item {
	var items []Item
	for _, acl := range inv.WebACLs {
		items = append(items, Item{"AWS WAF web ACL (edge rate rule)", fmt.Sprintf("1 web ACL × %s + %d rule(s) × %s", money(p.WAFWebACLMonth.USD),
			acl.Rules, money(p.WAFRuleMonth.USD)), p.WAFWebACLMonth.USD + float64(acl.Rules)*p.WAFRuleMonth.USD})
	}
	return items
}

// edgePerMillion: the web ACL sits on the page's distribution and inspects
// every request CloudFront takes, the page's files and every API request,
// the line fetches it answers from its cache too (the same count as
// CloudFront's HTTPS requests, pagePerMillion).
func edgePerMillion(inv Inventory, w Walk, p Prices) ([]Item, error) {
	if len(inv.WebACLs) == 0 {
		return nil, nil
	}
	if inv.Distributions == 0 {
		return nil, fmt.Errorf("cost: a web ACL without the page's distribution, which this model does not price")
	}
	files, _, err := pageFiles()
	if err != nil {
		return nil, err
	}
	perVisitor := float64(files + w.ViewerRequests())
	return []Item{{"AWS WAF requests (edge rate rule)", fmt.Sprintf("%.0f a visitor: every request through CloudFront, × %s a million",
		perVisitor, money(p.WAFRequest.USD*1e6)), Visitors * perVisitor * float64(len(inv.WebACLs)) * p.WAFRequest.USD}}, nil
}

// edgeDoc is docs/cost.md's section on the edge rate rule: what
// edgeRateLimit adds to the page (configuration page-edge against page).
func edgeDoc(edge, page Priced) string {
	var waf []Item
	for _, it := range append(append([]Item{}, edge.R.Idle...), edge.R.PerMillion...) {
		if strings.HasPrefix(it.Name, "AWS WAF") {
			waf = append(waf, it)
		}
	}
	return fmt.Sprintf("The rule adds %s a month idle and %s per million visitors to the page (configuration `page-edge`: idle %s, "+
		"per million %s; `page`: %s and %s):\n\n%s", usd(edge.R.IdleMonthlyUSD-page.R.IdleMonthlyUSD),
		usd(edge.R.PerMillionUSD-page.R.PerMillionUSD), usd(edge.R.IdleMonthlyUSD), usd(edge.R.PerMillionUSD),
		usd(page.R.IdleMonthlyUSD), usd(page.R.PerMillionUSD), mdTable([]string{"item", "USD", "how"}, itemRows(waf)))
}
