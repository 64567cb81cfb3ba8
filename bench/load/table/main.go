// Command table prints README.md's load table from the load results on
// its standard input (bench/load/run.sh pipes it into cmd/fragment):
//
//	go run ./bench/load/table < docs/bench/load-results.json
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/waitroom/waitroom/bench/load/loadtable"
)

func main() {
	b, err := io.ReadAll(os.Stdin)
	if err == nil {
		var r loadtable.Results
		if r, err = loadtable.Parse(b); err == nil {
			fmt.Print(loadtable.Render(r))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
}
