// Command fragment puts a measured figure block into a document: it
// replaces what lies between the lines
//
//	<!-- begin NAME: … -->
//	<!-- end NAME -->
//
// of FILE with its standard input, so that figures in the README and the
// docs come from the command that measured them, never from copying. It
// fails when the markers are missing or repeated.
//
//	some-measurement | go run ./cmd/fragment -file README.md -name load
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
)

func main() {
	file := flag.String("file", "", "the document to update")
	name := flag.String("name", "", "the fragment's name in its markers")
	flag.Parse()
	if *file == "" || *name == "" {
		fmt.Fprintln(os.Stderr, "usage: fragment -file FILE -name NAME < content")
		os.Exit(2)
	}
	content, err := io.ReadAll(os.Stdin)
	if err == nil {
		err = replace(*file, *name, content)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fragment:", err)
		os.Exit(1)
	}
}

func replace(file, name string, content []byte) error {
	doc, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := splice(doc, name, content)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return os.WriteFile(file, out, 0o644)
}

// splice returns doc with the lines between NAME's markers replaced by content.
func splice(doc []byte, name string, content []byte) ([]byte, error) {
	q := regexp.QuoteMeta(name)
	begin := regexp.MustCompile(`(?m)^<!-- begin ` + q + `[: ].*-->\n`)
	end := regexp.MustCompile(`(?m)^<!-- end ` + q + ` -->$`)
	b, e := begin.FindAllIndex(doc, -1), end.FindAllIndex(doc, -1)
	if len(b) != 1 || len(e) != 1 || e[0][0] < b[0][1] {
		return nil, fmt.Errorf("want one '<!-- begin %s: … -->' line followed by one '<!-- end %s -->' line (found %d and %d)", name, name, len(b), len(e))
	}
	if len(content) > 0 && !bytes.HasSuffix(content, []byte("\n")) {
		content = append(content, '\n')
	}
	var out bytes.Buffer
	out.Write(doc[:b[0][1]])
	out.Write(content)
	out.Write(doc[e[0][0]:])
	return out.Bytes(), nil
}
