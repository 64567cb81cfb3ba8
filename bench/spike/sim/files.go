package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// Version is the first output of cmd arg (a tool's version line), or
// "unknown" when it does not run.
func Version(cmd, arg string) string {
	out, err := exec.Command(cmd, arg).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// WriteJSON writes v to path, making its directory: on one line with
// indent "", else indented by indent a level (each command keeps the
// layout its committed results file has).
func WriteJSON(path string, v any, indent string) error {
	b, err := json.Marshal(v)
	if indent != "" {
		b, err = json.MarshalIndent(v, "", indent)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Publish ends a measuring command's run: table on stdout; res written to
// out (none for "") as WriteJSON does with indent, noted on stderr; and,
// as the last line, head as one JSON object (the headline).
func Publish(table, out string, res any, indent string, head any) error {
	fmt.Print(table)
	if out != "" {
		if err := WriteJSON(out, res, indent); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", out)
	}
	line, _ := json.Marshal(head)
	fmt.Println(string(line))
	return nil
}

// Main runs a measuring command named name once its flags are read: it
// exits 2 on invalid (the flags' check), else runs run until it returns or
// SIGINT/SIGTERM cancels its context, and exits 1 on its error.
func Main(name string, invalid error, run func(ctx context.Context) error) {
	if invalid != nil {
		fmt.Fprintln(os.Stderr, name+":", invalid)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
