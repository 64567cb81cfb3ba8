package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// EnvConfigurations names a configurations file (configurations.json):
// with it the app synthesizes every configuration in the file side by side,
// each into $CDK_OUTDIR/<name>/, with stand-in function assets. Those
// templates are for checking (cfn-lint, the update test, the cost model),
// never for deploying.
const EnvConfigurations = "WAITROOM_CONFIGURATIONS"

// Configuration is one documented configuration: its full context.
type Configuration struct {
	Name    string         `json:"name"`
	About   string         `json:"about"`
	Context map[string]any `json:"context"`
}

// configurationsFile is configurations.json: each configuration's context
// is Base's with its keys changed (null removes a key).
type configurationsFile struct {
	About          string          `json:"about"`
	Base           string          `json:"base"`
	Configurations []Configuration `json:"configurations"`
}

var configurationNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// LoadConfigurations reads a configurations file; Base is relative to it.
func LoadConfigurations(path string) ([]Configuration, error) {
	var f configurationsFile
	if err := readJSON(path, &f); err != nil {
		return nil, err
	}
	base := map[string]any{}
	if f.Base != "" {
		if err := readJSON(filepath.Join(filepath.Dir(path), f.Base), &base); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for i, c := range f.Configurations {
		if !configurationNameRE.MatchString(c.Name) || seen[c.Name] {
			return nil, fmt.Errorf("%s: configuration %q: want a unique name of lower-case letters, digits and hyphens", path, c.Name)
		}
		seen[c.Name] = true
		ctx := map[string]any{}
		for k, v := range base {
			ctx[k] = v
		}
		for k, v := range c.Context {
			if v == nil {
				delete(ctx, k)
			} else {
				ctx[k] = v
			}
		}
		f.Configurations[i].Context = ctx
	}
	return f.Configurations, nil
}

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// mapContext is a contextGetter over a configuration's context.
type mapContext map[string]any

func (m mapContext) get(key string) interface{} { return m[key] }

// ConfigurationTemplate is where synthConfiguration writes a configuration's
// template under outdir.
func ConfigurationTemplate(outdir string, c Configuration) string {
	return filepath.Join(outdir, c.Name, configurationStackID(c)+".template.json")
}

// configurationStackID is the stack's id: stackName, as the app names it.
func configurationStackID(c Configuration) string {
	if id := ctxString(mapContext(c.Context), CtxStackName); id != "" {
		return id
	}
	return "Waitroom"
}

// synthConfiguration synthesizes one configuration in an app of its own
// (outdir/<name>/), under the stack id the app would give it, so that its
// template is the one `make synth` writes with that context (CDK derives
// some logical ids from the stack's id) and two configurations' templates
// compare as two versions of one deployed stack.
func synthConfiguration(c Configuration, outdir, assetDir string) (*Waitroom, error) {
	p, err := propsFromContext(mapContext(c.Context))
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Name, err)
	}
	p.AssetDir = assetDir
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(outdir, c.Name))})
	w, err := NewWaitroomStack(app, configurationStackID(c), p)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Name, err)
	}
	app.Synth(nil)
	return w, nil
}

// synthConfigurations synthesizes every configuration of the file at path
// into outdir, with stand-in function assets.
func synthConfigurations(path, outdir string) error {
	confs, err := LoadConfigurations(path)
	if err != nil {
		return err
	}
	assets, err := standInAssets()
	if err != nil {
		return err
	}
	defer os.RemoveAll(assets)
	for _, c := range confs {
		if _, err := synthConfiguration(c, outdir, assets); err != nil {
			return err
		}
	}
	return nil
}

// standInAssets is a new temporary directory with a stand-in bootstrap per
// function (a script naming it, so that each asset differs), laid out as
// `make build` lays out build/: templates without a build.
func standInAssets() (string, error) {
	dir, err := os.MkdirTemp("", "waitroom-assets-")
	if err != nil {
		return "", err
	}
	for _, fn := range append(append([]string{}, Functions...), FnIntakeConsumer) {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("#!/bin/sh\n# "+fn+"\n"), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}
