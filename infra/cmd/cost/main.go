// Command cost prints Waitroom's monthly idle cost and its cost per million
// visitors from a synthesized template (`make cost`; docs/cost.md). The
// last line is one JSON object.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/waitroom/waitroom/infra/cost"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	opt := cost.DefaultOptions
	path := flag.String("template", "cdk.out/Waitroom.template.json", "the synthesized CloudFormation template")
	flag.Float64Var(&opt.WaitSeconds, "wait", opt.WaitSeconds, "a visitor's wait in line, in seconds")
	flag.Float64Var(&opt.OrderAPIMs, "order-api-ms", opt.OrderAPIMs, "the order API's answer time, billed to the order gate, in ms")
	flag.Parse()

	inv, err := cost.ReadTemplate(*path)
	if err != nil {
		return err
	}
	m, err := cost.Measure(inv, opt)
	if err != nil {
		return err
	}
	r, err := cost.Estimate(inv, m, cost.USEast1, opt)
	if err != nil {
		return err
	}
	return r.Print(os.Stdout, cost.USEast1, m, *path)
}
