// Command cost prints Waitroom's monthly idle cost and its cost per million
// visitors for one configuration (`make cost`; docs/cost.md): a documented
// one (configurations.json), with context keys changed if asked, which it
// synthesizes itself; or a template already synthesized (-template). With
// -docs it also renders the generated figures of docs/cost.md and
// infra/README.md from every documented configuration. The last line is
// one JSON object.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/waitroom/waitroom/infra/configs"
	"github.com/waitroom/waitroom/infra/cost"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type flags struct {
	opt                             cost.Options
	configurations, config, context string
	template, docs                  string
}

func run() error {
	f := flags{opt: cost.DefaultOptions}
	flag.StringVar(&f.configurations, "configurations", "configurations.json", "the documented configurations")
	flag.StringVar(&f.config, "config", "default", "the configuration to price (a name in -configurations)")
	flag.StringVar(&f.context, "context", "", `context keys (JSON, as make synth's) changed on top of the configuration's; null removes one`)
	flag.StringVar(&f.template, "template", "", "price this synthesized template instead (no synthesis)")
	flag.StringVar(&f.docs, "docs", "", "also write the documents' generated fragments into this directory")
	flag.Float64Var(&f.opt.WaitSeconds, "wait", f.opt.WaitSeconds, "a visitor's wait in line, in seconds")
	flag.Float64Var(&f.opt.OrderAPIMs, "order-api-ms", f.opt.OrderAPIMs, "the order API's answer time, billed to the order gate, in ms")
	flag.IntVar(&f.opt.IdleRooms, "rooms", f.opt.IdleRooms, "rooms created while nobody visits")
	flag.StringVar(&f.opt.Viewers, "viewers", f.opt.Viewers, "where the visitors are: a CloudFront pricing region or a country in one (korea, japan, …)")
	flag.Parse()
	if f.template != "" {
		pc, err := cost.Priced{Name: f.template, About: "the template " + f.template}.Load(f.template, f.opt)
		if err != nil {
			return err
		}
		return pc.R.Print(os.Stdout, cost.USEast1, pc.M, pc.Describe())
	}
	return priceConfigurations(f)
}

// priceConfigurations synthesizes the asked configuration (and, for -docs,
// every documented one) in one run of the app, then prices them.
func priceConfigurations(f flags) error {
	documented, err := configs.Load(f.configurations)
	if err != nil {
		return err
	}
	asked, err := chosen(documented, f.config, f.context)
	if err != nil {
		return err
	}
	synth := []configs.Configuration{asked}
	if f.docs != "" {
		synth = documented
		if f.context != "" {
			synth = append(synth, asked)
		}
	}
	dir, err := synthesize(synth)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if f.docs != "" {
		if err := writeDocs(f.docs, documented, dir); err != nil {
			return err
		}
	}
	pc, err := cost.PriceConfiguration(asked, dir, f.opt)
	if err != nil {
		return err
	}
	return pc.R.Print(os.Stdout, cost.USEast1, pc.M, pc.Describe())
}

// chosen is the documented configuration name, with the context keys of
// extra (JSON) changed: then it is named name+context.
func chosen(documented []configs.Configuration, name, extra string) (configs.Configuration, error) {
	for _, c := range documented {
		if c.Name != name {
			continue
		}
		if extra == "" {
			return c, nil
		}
		var keys map[string]any
		if err := json.Unmarshal([]byte(extra), &keys); err != nil {
			return c, fmt.Errorf("cost: -context %s: want a JSON object of context keys: %w", extra, err)
		}
		return configs.Configuration{Name: name + "-context", About: c.About + ", with " + extra, Context: configs.Merge(c.Context, keys)}, nil
	}
	return configs.Configuration{}, fmt.Errorf("cost: no configuration %q in the configurations file", name)
}

// synthesize runs the app (`go run .` here, in infra/) over confs: each
// template lands in the returned directory (configs.Configuration.Template).
func synthesize(confs []configs.Configuration) (string, error) {
	dir, err := os.MkdirTemp("", "waitroom-cost-")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "configurations.json")
	if err := configs.Write(file, confs); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Env = append(os.Environ(), "WAITROOM_CONFIGURATIONS="+file, "CDK_OUTDIR="+dir, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("cost: synthesizing %d configurations: %v\n%s", len(confs), err, out)
	}
	return dir, nil
}

// writeDocs prices every documented configuration and writes each
// generated fragment to dir/<name>.md, and dir/fragments.txt: one
// "<document> <name>" line per fragment, for cmd/fragment.
func writeDocs(dir string, documented []configs.Configuration, templates string) error {
	frags, err := cost.DocumentsFor(documented, templates)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var list []byte
	for _, fr := range frags {
		if err := os.WriteFile(filepath.Join(dir, fr.Name+".md"), []byte(fr.Text), 0o644); err != nil {
			return err
		}
		list = append(list, fr.Document+" "+fr.Name+"\n"...)
	}
	return os.WriteFile(filepath.Join(dir, "fragments.txt"), list, 0o644)
}
