// Command localstack-probe tells `make e2e-localstack` whether LocalStack
// answers at the given endpoint with Lambda and EventBridge.
// It exits 0 when it does, and 3 after printing one skip line when it does
// not, so that the target skips cleanly on machines without LocalStack.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/waitroom/waitroom/e2e/localstack"
)

func main() {
	endpoint := "http://localhost:4566"
	if len(os.Args) > 1 && os.Args[1] != "" {
		endpoint = os.Args[1]
	}
	if err := localstack.Probe(context.Background(), endpoint); err != nil {
		fmt.Printf("e2e-localstack: SKIP: no LocalStack at %s (%v); set LOCALSTACK_ENDPOINT, see docs/e2e.md\n", endpoint, err)
		os.Exit(3)
	}
	fmt.Printf("e2e-localstack: LocalStack at %s\n", endpoint)
}
