package main

import (
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	doc := "intro\n<!-- begin load: written by make load -->\nold table\n<!-- end load -->\nafter\n"
	got, err := splice([]byte(doc), "load", []byte("new table"))
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n<!-- begin load: written by make load -->\nnew table\n<!-- end load -->\nafter\n"
	if string(got) != want {
		t.Fatalf("got %q", got)
	}
	for name, bad := range map[string]string{
		"no markers":     "text\n",
		"no end":         "<!-- begin load: x -->\n",
		"end first":      "<!-- end load -->\n<!-- begin load: x -->\n",
		"two blocks":     strings.Repeat("<!-- begin load: x -->\n<!-- end load -->\n", 2),
		"other fragment": "<!-- begin loads: x -->\n<!-- end loads -->\n",
	} {
		if _, err := splice([]byte(bad), "load", nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
