package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom/infra/configs"
)

// EnvConfigurations names a configurations file (configurations.json):
// with it the app synthesizes every configuration in the file side by side,
// each into $CDK_OUTDIR/<name>/, with stand-in function assets. Those
// templates are for checking (cfn-lint, the update test, the cost model),
// never for deploying.
const EnvConfigurations = "WAITROOM_CONFIGURATIONS"

// mapContext is a contextGetter over a configuration's context.
type mapContext map[string]any

func (m mapContext) get(key string) interface{} { return m[key] }

// synthConfiguration synthesizes one configuration in an app of its own
// (outdir/<name>/), under the stack id the app would give it, so that its
// template is the one `make synth` writes with that context (CDK derives
// some logical ids from the stack's id) and two configurations' templates
// compare as two versions of one deployed stack.
func synthConfiguration(c configs.Configuration, outdir, assetDir string) (*Waitroom, error) {
	p, err := propsFromContext(mapContext(c.Context))
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Name, err)
	}
	p.AssetDir = assetDir
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(outdir, c.Name))})
	w, err := NewWaitroomStack(app, c.StackID(), p)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Name, err)
	}
	app.Synth(nil)
	return w, nil
}

// synthConfigurations synthesizes every configuration of the file at path
// into outdir, with stand-in function assets.
func synthConfigurations(path, outdir string) error {
	confs, err := configs.Load(path)
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
