package configs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("base.json", `{"jwtIssuer":"https://a/","orderGateEgress":"private","orderApiCidr":"10.40.0.0/16"}`)
	confs, err := Load(write("c.json", `{"base":"base.json","configurations":[
		{"name":"default","context":{}},
		{"name":"nat","context":{"orderGateEgress":"nat","orderApiCidr":null}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(confs) != 2 || confs[0].Context["orderApiCidr"] != "10.40.0.0/16" || confs[1].Context["orderGateEgress"] != "nat" {
		t.Fatalf("configurations %+v", confs)
	}
	if _, ok := confs[1].Context["orderApiCidr"]; ok || confs[1].Context["jwtIssuer"] != "https://a/" {
		t.Errorf("nat: null should remove a key and keep the base's others: %v", confs[1].Context)
	}
	for _, bad := range []string{`{"configurations":[{"name":"a"},{"name":"a"}]}`, `{"configurations":[{"name":"Bad Name"}]}`} {
		if _, err := Load(write("bad.json", bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestStackIDAndTemplate(t *testing.T) {
	c := Configuration{Name: "nat", Context: map[string]any{}}
	if c.StackID() != "Waitroom" || c.Template("out") != filepath.Join("out", "nat", "Waitroom.template.json") {
		t.Errorf("%s %s", c.StackID(), c.Template("out"))
	}
	c.Context[StackNameKey] = "Rehearsal"
	if c.StackID() != "Rehearsal" {
		t.Errorf("stackName ignored: %s", c.StackID())
	}
}
