package cost

import "testing"

func TestViewerAndBilledRegions(t *testing.T) {
	for _, c := range []struct {
		viewers, class, billed string
		served                 bool
	}{
		{"korea", "PriceClass_200", "asia-pacific", true},
		{"Japan", "PriceClass_200", "japan", true},
		{"korea", "PriceClass_100", "us", false},
		{"europe", "PriceClass_100", "europe", true},
		{"australia", "PriceClass_200", "us", false},
		{"australia", "PriceClass_All", "australia", true},
	} {
		v, err := ViewerRegion(c.viewers)
		if err != nil {
			t.Fatal(err)
		}
		if b, served := BilledRegion(c.class, v); b.Key != c.billed || served != c.served {
			t.Errorf("%s under %s: billed at %s (served %v), want %s (%v)", c.viewers, c.class, b.Key, served, c.billed, c.served)
		}
	}
	if _, err := ViewerRegion("atlantis"); err == nil {
		t.Error("an unknown place was accepted")
	}
}

// The page's traffic is priced at the serving region's rates: Korea's
// under PriceClass_200 (AWS's table: $0.120 a GB against the US's $0.085).
func TestPagePricedWhereTheViewersAre(t *testing.T) {
	files, bytes, err := pageFiles()
	if err != nil {
		t.Fatal(err)
	}
	// The page's line fetches are CloudFront's requests and answers too,
	// though its cache answers them.
	w := Walk{LineFetches: 20, WaitingPolls: 1, ReadyPolls: 1}
	inv := Inventory{Distributions: 1, PriceClass: "PriceClass_200"}
	price := func(viewers string) (requests, transfer float64) {
		items, err := pagePerMillion(inv, w, Options{Viewers: viewers})
		if err != nil {
			t.Fatal(err)
		}
		return items[0].USD, items[1].USD
	}
	perVisitor := float64(files + 4 + 20) // enter, two polls, order; the line
	out := bytes + (4+20)*APIAnswerBytes
	for viewers, rates := range map[string][2]float64{"us": {0.0100, 0.085}, "korea": {0.0120, 0.120}, "japan": {0.0120, 0.114}} {
		req, tr := price(viewers)
		if !near(req, 1e6*perVisitor*rates[0]/1e4) || !near(tr, 1e6*out/1e9*rates[1]) {
			t.Errorf("%s: requests $%.4f, transfer $%.4f; want $%.4f, $%.4f", viewers, req, tr, 1e6*perVisitor*rates[0]/1e4, 1e6*out/1e9*rates[1])
		}
	}
}
