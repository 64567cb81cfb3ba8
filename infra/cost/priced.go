package cost

import (
	"encoding/json"
	"fmt"

	"github.com/waitroom/waitroom/infra/configs"
)

// Priced is one configuration's template, measured and priced.
type Priced struct {
	Name, About string
	Context     string // the configuration's context, as JSON
	Inv         Inventory
	Opt         Options
	M           Measured
	R           Report
}

// Describe is what `make cost` prints about the configuration.
func (pc Priced) Describe() string {
	if pc.Context == "" {
		return pc.About
	}
	return pc.About + "; context " + pc.Context
}

// Load reads pc's template at path and prices it with opt, at USEast1's prices.
func (pc Priced) Load(path string, opt Options) (Priced, error) {
	inv, err := ReadTemplate(path)
	if err != nil {
		return Priced{}, err
	}
	pc.Inv = inv
	return pc.With(opt)
}

// With prices the same template with other options.
func (pc Priced) With(opt Options) (Priced, error) {
	m, err := Measure(pc.Inv, opt)
	if err != nil {
		return Priced{}, err
	}
	r, err := Estimate(pc.Inv, m, USEast1, opt)
	if err != nil {
		return Priced{}, err
	}
	r.Configuration = pc.Name
	pc.Opt, pc.M, pc.R = opt, m, r
	return pc, nil
}

// PriceConfiguration prices configuration c, whose template the app wrote
// under dir (configs.Configuration.Template).
func PriceConfiguration(c configs.Configuration, dir string, opt Options) (Priced, error) {
	ctx, err := json.Marshal(c.Context)
	if err != nil {
		return Priced{}, err
	}
	pc, err := Priced{Name: c.Name, About: c.About, Context: string(ctx)}.Load(c.Template(dir), opt)
	if err != nil {
		return Priced{}, fmt.Errorf("configuration %s: %w", c.Name, err)
	}
	return pc, nil
}

// DocumentsFor prices every documented configuration with DefaultOptions
// and renders the documents' fragments (Documents).
func DocumentsFor(documented []configs.Configuration, dir string) ([]Fragment, error) {
	var all []Priced
	for _, c := range documented {
		pc, err := PriceConfiguration(c, dir, DefaultOptions)
		if err != nil {
			return nil, err
		}
		all = append(all, pc)
	}
	return Documents(all)
}
