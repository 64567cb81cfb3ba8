package sim

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
