// Command entrytoken-keys makes the two values a deployment with signed
// entry tokens needs: ENTRY_TOKEN_KEYS, the Ed25519 seeds that enter and
// position sign with, and ENTRY_TOKEN_PUBLIC_KEYS, their public keys, which
// is all the order gate gets (it verifies and must not be able to sign).
//
//	entrytoken-keys            a fresh key
//	entrytoken-keys -rotate    a fresh key first, then the current one of
//	                           the ENTRY_TOKEN_KEYS read from stdin
//	entrytoken-keys -public    the public keys of the ENTRY_TOKEN_KEYS read
//	                           from stdin (after a rotation's last step, or
//	                           for a stack deployed before the gate had its own)
//
// It prints two lines, NAME=value, for the shell's eval (infra/README.md,
// "Signed entry tokens"). Seeds are read from stdin, never from the command
// line, where other users of the machine could see them.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/waitroom/waitroom/entrytoken"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("entrytoken-keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rotate := fs.Bool("rotate", false, "put a fresh key before the current one of the ENTRY_TOKEN_KEYS on stdin")
	public := fs.Bool("public", false, "print the public keys of the ENTRY_TOKEN_KEYS on stdin")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || (*rotate && *public) {
		fmt.Fprintln(stderr, "usage: entrytoken-keys [-rotate | -public] (with either, ENTRY_TOKEN_KEYS on stdin)")
		return 2
	}
	seeds, err := keys(*rotate, *public, stdin)
	if err != nil {
		fmt.Fprintln(stderr, "entrytoken-keys:", err)
		return 1
	}
	parsed, err := entrytoken.ParseKeys(seeds, "")
	if err != nil {
		fmt.Fprintln(stderr, "entrytoken-keys: ENTRY_TOKEN_KEYS:", err) // never quotes the seed
		return 1
	}
	fmt.Fprintf(stdout, "ENTRY_TOKEN_KEYS=%s\nENTRY_TOKEN_PUBLIC_KEYS=%s\n", seeds, parsed.PublicKeys())
	return 0
}

// keys is the ENTRY_TOKEN_KEYS to print: a fresh seed, the fresh seed and
// the current one of stdin's (its previous key, if any, is dropped: a
// rotation keeps two), or stdin's as they are.
func keys(rotate, public bool, stdin io.Reader) (string, error) {
	if !rotate && !public {
		return entrytoken.GenerateSeed()
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	current := strings.TrimSpace(line)
	if current == "" {
		return "", errors.New("no ENTRY_TOKEN_KEYS on stdin (aws ssm get-parameter … --query Parameter.Value --output text | entrytoken-keys -rotate)")
	}
	if public {
		return current, nil
	}
	fresh, err := entrytoken.GenerateSeed()
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(current, ",")
	return fresh + "," + strings.TrimSpace(first), nil
}
