// Command fill enters users p0, p1, … through a running waiting room, so that
// position polls have a long line to look into (bench/load/run.sh).
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "the waiting room")
	users := flag.Int("users", 100_000, "users to enter")
	flag.Parse()
	ids := make(chan int)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				req, _ := http.NewRequest(http.MethodPost, *url+"/queue/enter", nil)
				req.Header.Set("X-User-Id", fmt.Sprintf("p%d", i))
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	for i := 0; i < *users; i++ {
		ids <- i
	}
	close(ids)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "fill: %d of %d enters failed\n", n, *users)
		os.Exit(1)
	}
}
