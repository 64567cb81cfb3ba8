package main

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
)

// Render is the results as docs/design.md shows them (the lua-floor block).
func Render(r *Results) string {
	per := map[string]float64{}
	for _, c := range r.Cases {
		per[c.Key] = c.PerCall(r.Calls)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `make bench-luafloor` (%s; %s): instructions of redis-server per `EVALSHA` of a script of one construct (the last rows: the least enter, and one command), %d calls after %d unmeasured, Redis's timer left out. \"Over the floor\": over `return 1` with the same keys (no key for the rows of keys and arguments; for the upvalues, over the 30 functions that read none); \"each\": that over the number of the construct.\n\n",
		redisVersion(r.Redis), strings.TrimSpace(r.Valgrind), r.Calls, r.Warmup)
	b.WriteString("| the script | instructions per call | over the floor | each |\n| --- | ---: | ---: | ---: |\n")
	for _, c := range r.Cases {
		v := per[c.Key]
		if c.Baseline == "" {
			fmt.Fprintf(&b, "| %s | %s | | |\n", c.What, tens(v))
			continue
		}
		d := v - per[c.Baseline]
		each := ""
		if c.Units > 0 {
			each = tens(d / float64(c.Units))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.What, tens(v), signed(d), each)
	}
	return b.String()
}

// redisVersion is "Redis 7.0.15" of redis-server --version's line.
func redisVersion(line string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return "Redis " + v
		}
	}
	return strings.TrimSpace(line)
}

// tens is v rounded to tens, with thousands separated.
func tens(v float64) string {
	n := int64(math.Round(v/10) * 10)
	neg := n < 0
	if neg {
		n = -n
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "−" + s
	}
	return s
}

func signed(v float64) string {
	if math.Round(v/10) >= 0 {
		return "+" + tens(v)
	}
	return tens(v)
}

// block is the lua-floor block of a document: its markers and what lies between.
var block = regexp.MustCompile(`(?s)(<!-- begin lua-floor[: ][^\n]*-->\n)(.*?)(<!-- end lua-floor -->)`)

// spliceFile puts Render(r) between doc's lua-floor markers.
func spliceFile(doc string, r *Results) error {
	text, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	if n := len(block.FindAllIndex(text, -1)); n != 1 {
		return fmt.Errorf("%s: want one block between <!-- begin lua-floor: … --> and <!-- end lua-floor -->, found %d", doc, n)
	}
	out := block.ReplaceAllFunc(text, func(m []byte) []byte {
		s := block.FindSubmatch(m)
		return []byte(string(s[1]) + Render(r) + string(s[3]))
	})
	return os.WriteFile(doc, out, 0o644)
}

// blockOf is what lies between doc's lua-floor markers ("" and false: none).
func blockOf(text []byte) (string, bool) {
	m := block.FindSubmatch(text)
	if m == nil {
		return "", false
	}
	return string(m[2]), true
}
