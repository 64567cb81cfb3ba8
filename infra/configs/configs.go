// Package configs reads configurations.json, the documented configurations
// of the stack (infra/README.md), for the app (`make templates`), its tests
// and the cost command (`make cost`).
package configs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Configuration is one documented configuration: its full context.
type Configuration struct {
	Name    string         `json:"name"`
	About   string         `json:"about"`
	Context map[string]any `json:"context"`
}

// configurationsFile is configurations.json: each configuration's context
// is Base's with its keys changed (null removes a key).
type configurationsFile struct {
	About          string          `json:"about,omitempty"`
	Base           string          `json:"base"`
	Configurations []Configuration `json:"configurations"`
}

var configurationNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Load reads a configurations file; Base is relative to it.
func Load(path string) ([]Configuration, error) {
	var f configurationsFile
	if err := ReadJSON(path, &f); err != nil {
		return nil, err
	}
	base := map[string]any{}
	if f.Base != "" {
		if err := ReadJSON(filepath.Join(filepath.Dir(path), f.Base), &base); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for i, c := range f.Configurations {
		if !configurationNameRE.MatchString(c.Name) || seen[c.Name] {
			return nil, fmt.Errorf("%s: configuration %q: want a unique name of lower-case letters, digits and hyphens", path, c.Name)
		}
		seen[c.Name] = true
		f.Configurations[i].Context = Merge(base, c.Context)
	}
	return f.Configurations, nil
}

// Merge is base with changes applied: a key set, or removed when null.
func Merge(base, changes map[string]any) map[string]any {
	ctx := map[string]any{}
	for k, v := range base {
		ctx[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(ctx, k)
		} else {
			ctx[k] = v
		}
	}
	return ctx
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// StackNameKey is the context key of the stack's name (and id in the app).
const StackNameKey = "stackName"

// StackID is the stack's id in the app, as the app names it: the
// configuration's stackName, default Waitroom.
func (c Configuration) StackID() string {
	if id, ok := c.Context[StackNameKey].(string); ok && id != "" {
		return id
	}
	return "Waitroom"
}

// Template is where the app (WAITROOM_CONFIGURATIONS) writes c's template
// under outdir: each configuration in an app of its own.
func (c Configuration) Template(outdir string) string {
	return filepath.Join(outdir, c.Name, c.StackID()+".template.json")
}

// Write writes confs as a configurations file with full contexts (no base).
func Write(path string, confs []Configuration) error {
	raw, err := json.MarshalIndent(configurationsFile{Configurations: confs}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}
