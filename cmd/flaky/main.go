// Command flaky runs packages' tests again and again on a busy machine and
// reports every test that ever failed: how many of its runs failed, and
// the first failure's output (issue 38). A test that fails only when the
// machine is slow or the scheduler unlucky is found here rather than in CI,
// where its failure would read as a coin toss.
//
// It starts -burners CPU burners (threads that spin, as stress -c would)
// and, beside them, one go test -json -count=N over the packages; the
// burners stop when go test ends. The exit status is 1 when a test failed
// or go test itself did (a build error, a timeout), 0 when every run passed.
//
//	go run ./cmd/flaky -count 20 -run 'TestLimiter' ./localrun/ ./redisstore/
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

func main() {
	count := flag.Int("count", 20, "runs of each test (go test -count)")
	run := flag.String("run", "", "only the tests matching this regexp (go test -run; empty: all)")
	burners := flag.Int("burners", runtime.NumCPU(), "CPU burners beside the tests (0: none)")
	race := flag.Bool("race", true, "run the tests with the race detector, as make test does")
	timeout := flag.Duration("timeout", 2*time.Hour, "bound of the whole go test run (go test -timeout)")
	parallel := flag.Int("p", 0, "packages tested at once (go test -p; 0: go's default)")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 || *count < 1 || *burners < 0 {
		fmt.Fprintln(os.Stderr, "usage: flaky [-count N] [-run REGEXP] [-burners K] [-race=false] [-timeout D] [-p P] PACKAGES...")
		os.Exit(2)
	}
	args := []string{"test", "-json", fmt.Sprintf("-count=%d", *count), "-timeout", timeout.String()}
	if *race {
		args = append(args, "-race")
	}
	if *run != "" {
		args = append(args, "-run", *run)
	}
	if *parallel > 0 {
		args = append(args, fmt.Sprintf("-p=%d", *parallel))
	}
	args = append(args, pkgs...)
	fmt.Printf("flaky: go %s, beside %d CPU burners\n", strings.Join(args, " "), *burners)
	start := time.Now()
	results, err := test(args, *burners)
	failed := report(os.Stdout, results)
	fmt.Printf("flaky: %s\n", time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "flaky: go test:", err)
	}
	if failed || err != nil {
		os.Exit(1)
	}
}

// test runs go with args beside burners spinning threads and reads its
// -json stream. The error is go test's (a failed test makes one too).
func test(args []string, burners int) ([]result, error) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	runtime.GOMAXPROCS(burners + 2) // the stream is read beside them
	for range burners {
		go burn(ctx)
	}
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	results, perr := parse(out)
	io.Copy(io.Discard, out) // whatever follows a line that does not parse
	if err := cmd.Wait(); err != nil {
		return results, err
	}
	return results, perr
}

// burn keeps one thread of its own busy until ctx ends, as one stress -c
// worker would: the tests then get the machine's leftovers.
func burn(ctx context.Context) {
	runtime.LockOSThread()
	for x := uint64(1); ctx.Err() == nil; {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if x == 0 { // never; keeps the loop from being optimized away
			fmt.Print()
		}
	}
}
