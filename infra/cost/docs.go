package cost

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/waitroom/waitroom"
)

// Fragment is one generated block of a document: what stands between its
// <!-- begin NAME: … --> and <!-- end NAME --> lines (cmd/fragment writes it).
type Fragment struct {
	Document string // repository-relative path
	Name     string
	Text     string
}

// The documents whose figures the model writes.
const (
	DocCost   = "docs/cost.md"
	DocReadme = "infra/README.md"
)

// DocumentedConfigurations are the configurations the documents price.
var DocumentedConfigurations = []string{"default", "page", "page-edge", "nat", "broker", "fallback"}

// Documents renders every generated fragment of DocCost and DocReadme from
// the documented configurations, priced with DefaultOptions: every figure
// of docs/cost.md and of infra/README.md's cost section comes from here.
func Documents(priced []Priced) ([]Fragment, error) {
	by := map[string]Priced{}
	for _, pc := range priced {
		by[pc.Name] = pc
	}
	for _, name := range DocumentedConfigurations {
		if _, ok := by[name]; !ok {
			return nil, fmt.Errorf("cost: the documents need the configuration %q", name)
		}
	}
	def := by["default"]
	walk, err := walkDoc(def)
	if err != nil {
		return nil, err
	}
	page, err := pageDoc(by["page"], def)
	if err != nil {
		return nil, err
	}
	var printout bytes.Buffer
	if err := def.R.Print(&printout, USEast1, def.M, def.Describe()); err != nil {
		return nil, err
	}
	return []Fragment{
		{DocCost, "cost-configurations", configurationsTable(priced)},
		{DocCost, "cost-walk", walk},
		{DocCost, "cost-per-request", perRequestDoc(def)},
		{DocCost, "cost-idle-how", idleHowDoc(def)},
		{DocCost, "cost-default", "```\n" + printout.String() + "```\n\n" + defaultSummary(def)},
		{DocCost, "cost-page", page},
		{DocCost, "cost-edge", edgeDoc(by["page-edge"], by["page"])},
		{DocCost, "cost-network", networkDoc(def, by["nat"], by["fallback"])},
		{DocCost, "cost-intake", intakeDoc(def, by["broker"], by["fallback"])},
		{DocCost, "cost-prices", pricesDoc(USEast1)},
		{DocCost, "cost-unknowns", unknownsDoc(def)},
		{DocReadme, "readme-cost", readmeCost(priced, def)},
		{DocReadme, "readme-admission", admissionDoc(def)},
	}, nil
}

var fragmentRE = regexp.MustCompile(`(?ms)^<!-- begin ([a-z0-9-]+)[: ].*?-->\n(.*?)^<!-- end ([a-z0-9-]+) -->$`)

// Fragments are the generated blocks of a document, by name, as cmd/fragment
// writes them; a block whose end names another is an error.
func Fragments(doc []byte) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range fragmentRE.FindAllSubmatch(doc, -1) {
		if string(m[1]) != string(m[3]) {
			return nil, fmt.Errorf("cost: fragment %s ends as %s", m[1], m[3])
		}
		out[string(m[1])] = string(m[2])
	}
	return out, nil
}

var dollarRE = regexp.MustCompile(`\$[0-9]`)

// HandFigures are the lines of doc, outside its generated blocks, that
// hold a dollar figure: none may (every one comes from the model).
func HandFigures(doc []byte) []string {
	var out []string
	for _, line := range strings.Split(fragmentRE.ReplaceAllString(string(doc), ""), "\n") {
		if dollarRE.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

func usd(x float64) string { return fmt.Sprintf("$%.2f", x) }

// thousands writes n with a comma every three digits.
func thousands(n float64) string {
	s := fmt.Sprintf("%.0f", n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func mdTable(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|" + strings.Repeat(" --- |", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// LineUSD is the price of the line named name, and whether there is one.
func LineUSD(items []Item, name string) (float64, bool) {
	for _, it := range items {
		if it.Name == name {
			return it.USD, true
		}
	}
	return 0, false
}

// itemUSD is the price of the line named name (0 when absent).
func itemUSD(items []Item, name string) float64 {
	usd, _ := LineUSD(items, name)
	return usd
}

// differing are the lines of b that a lacks or prices differently.
func differing(a, b []Item) []Item {
	var out []Item
	for _, it := range b {
		if math.Abs(itemUSD(a, it.Name)-it.USD) >= 0.005 {
			out = append(out, it)
		}
	}
	return out
}

func itemRows(items []Item) [][]string {
	var rows [][]string
	for _, it := range items {
		rows = append(rows, []string{it.Name, usd(it.USD), it.Detail})
	}
	return rows
}

// configurationsTable: every configuration's idle and per-million bill.
func configurationsTable(priced []Priced) string {
	var rows [][]string
	for _, pc := range priced {
		rows = append(rows, []string{"`" + pc.Name + "`", pc.About, usd(pc.R.IdleMonthlyUSD), usd(pc.R.PerMillionUSD)})
	}
	o := priced[0].Opt
	return fmt.Sprintf("us-east-1 list prices taken %s; idle: %d rooms created, nobody in them; per million visitors: each waiting %g s "+
		"in one room, visitors in %s (`make cost COST_CONFIG=<configuration>` prints each line by line):\n\n", USEast1.Taken, o.IdleRooms, o.WaitSeconds, o.Viewers) +
		mdTable([]string{"configuration", "what it is", "idle, a month", "per million visitors"}, rows)
}

// walkDoc: the requests of one visitor, and with the tiers of before.
func walkDoc(def Priced) (string, error) {
	const earlier = "60:10000,10:5000,0:2000"
	cfg, w := def.M.Config, def.M.Walk
	tiers, err := waitroom.ParsePollTiers(earlier)
	if err != nil {
		return "", err
	}
	old := cfg
	old.PollTiers = tiers
	ow, err := WalkVisitor(old, def.Opt.WaitSeconds)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("The default configuration admits %g users a second, %g every %v; a visitor waiting %g s enters at position %s. "+
		"With `POLL_TIERS` `%s` that is %d polls (%d WAITING and the READY one, capped at the visitor's own turn, %.1f s after entering), "+
		"so **%d requests** (%d with the earlier `%s`).\n", cfg.AdmitRatePerSec, cfg.BatchSize(), cfg.AdmitInterval, def.Opt.WaitSeconds,
		thousands(float64(w.Position)), cfg.PollTiers, w.WaitingPolls+w.ReadyPolls, w.WaitingPolls, float64(w.ReadyAfterMs)/1000,
		w.Requests(), ow.Requests(), earlier), nil
}

// defaultSummary: what the default's figures say.
func defaultSummary(def Priced) string {
	r := def.R
	monitoring := itemUSD(r.Idle, "CloudWatch alarms") + itemUSD(r.Idle, "CloudWatch dashboards") + itemUSD(r.Idle, "CloudWatch custom metrics")
	requests := itemUSD(r.PerMillion, "API Gateway HTTP API requests") + itemUSD(r.PerMillion, "API Gateway CORS preflights") +
		itemUSD(r.PerMillion, "Lambda requests") + itemUSD(r.PerMillion, "CloudWatch Logs API access log")
	return fmt.Sprintf("What the figures say: idle is the cache's metered minimum (%s) and the monitoring (alarms, dashboard and "+
		"metrics: %s); admission costs almost nothing while nobody waits (one batch a minute, over every created room). Per visitor, "+
		"the request count drives API Gateway, Lambda requests and the access log: with one poll a minute (%d requests for a %g-s "+
		"wait) they are %s of the %s.\n", usd(itemUSD(r.Idle, "ElastiCache Serverless storage (valkey)")), usd(monitoring),
		r.RequestsPerVisitor, r.WaitSeconds, usd(requests), usd(r.PerMillionUSD))
}
