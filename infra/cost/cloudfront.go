package cost

import (
	"fmt"
	"slices"
	"strings"
)

// CloudFrontRegion is one of CloudFront's pricing regions: an edge
// location bills its requests and bytes at its region's rates, and a
// viewer is served from the lowest-latency edge its distribution's price
// class includes.
type CloudFrontRegion struct {
	Key  string // what -viewers names it by
	Name string // AWS's name of the region
	// Places are the other names -viewers accepts for it.
	Places []string
	// HTTPSRequest and GB: per request, per GB out to the internet (first
	// 10 TB a month, beyond the always-free 1 TB and 10 million requests).
	HTTPSRequest, GB Price
}

// The CloudFront page's data-transfer rates match a stored copy of it; its
// request rates could not be matched to one, hence unconfirmed.
func cfRegion(key, name string, places []string, https10k, gb float64) CloudFrontRegion {
	return CloudFrontRegion{Key: key, Name: name, Places: places,
		HTTPSRequest: Price{https10k / 1e4, "HTTPS request (CloudFront, " + name + ")", srcCloudFront, true},
		GB:           Price{gb, "GB to the internet (CloudFront, " + name + ", first 10 TB)", srcCloudFront, false}}
}

// CloudFrontRegions are CloudFront's pricing regions, in the order of
// AWS's price table.
var CloudFrontRegions = []CloudFrontRegion{
	cfRegion("us", "United States, Mexico, Canada", []string{"united-states", "mexico", "canada"}, 0.0100, 0.085),
	cfRegion("europe", "Europe, Israel, Türkiye", []string{"israel", "turkiye"}, 0.0120, 0.085),
	cfRegion("middle-east", "South Africa, Kenya, Nigeria, Middle East", []string{"south-africa", "kenya", "nigeria"}, 0.0120, 0.110),
	cfRegion("south-america", "South America", []string{"brazil"}, 0.0220, 0.110),
	cfRegion("japan", "Japan", nil, 0.0120, 0.114),
	cfRegion("australia", "Australia, New Zealand", []string{"new-zealand"}, 0.0125, 0.114),
	cfRegion("asia-pacific", "Hong Kong, Indonesia, Philippines, Singapore, South Korea, Taiwan, Thailand, Malaysia, Vietnam",
		[]string{"korea", "south-korea", "hong-kong", "indonesia", "philippines", "singapore", "taiwan", "thailand", "malaysia", "vietnam"}, 0.0120, 0.120),
	cfRegion("india", "India", nil, 0.0120, 0.109),
}

// PriceClasses are the regions whose edge locations each CloudFront price
// class uses (PriceClass_All: every region).
var PriceClasses = map[string][]string{
	"PriceClass_100": {"us", "europe"},
	"PriceClass_200": {"us", "europe", "middle-east", "japan", "asia-pacific", "india"},
}

// DefaultViewers is where the visitors are unless told otherwise.
const DefaultViewers = "us"

// ViewerRegion finds the pricing region of viewers (a region's key or a place in it).
func ViewerRegion(viewers string) (CloudFrontRegion, error) {
	v := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(viewers)), " ", "-")
	for _, r := range CloudFrontRegions {
		if r.Key == v || slices.Contains(r.Places, v) {
			return r, nil
		}
	}
	var keys []string
	for _, r := range CloudFrontRegions {
		keys = append(keys, r.Key)
	}
	return CloudFrontRegion{}, fmt.Errorf("cost: viewers %q: want one of %s (or a country in one: korea, singapore, …)", viewers, strings.Join(keys, ", "))
}

// BilledRegion is the region whose rates serve viewers under a price class.
// Viewers in a region the class leaves out are served from the nearest edge
// it includes; the model bills those at US rates, the lowest of every
// class, which is a lower bound. served says whether the viewers' own
// region serves them.
func BilledRegion(priceClass string, viewers CloudFrontRegion) (billed CloudFrontRegion, served bool) {
	regions, limited := PriceClasses[priceClass]
	if !limited || slices.Contains(regions, viewers.Key) {
		return viewers, true
	}
	us, _ := ViewerRegion(DefaultViewers)
	return us, false
}
