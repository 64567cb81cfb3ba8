// Command entrytoken-verify checks a Waitroom entry token the way a shop's
// own server would, with nothing but the waiting room's public JWKS:
//
//	entrytoken-verify -jwks https://queue.shop.example/.well-known/jwks.json \
//	    -issuer https://queue.shop.example -room tv-launch TOKEN
//
// It takes tokens of the one room -room names, or of every room with
// -any-room instead (one of the two is required, as entrytoken.Verifier
// requires Room or AnyRoom). It prints the claims as JSON and exits 0, or
// says why the token is refused and exits 1 (2 for a usage error).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/waitroom/waitroom/entrytoken"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("entrytoken-verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jwks := fs.String("jwks", "", "URL of the waiting room's /.well-known/jwks.json")
	issuer := fs.String("issuer", "waitroom", "the waiting room's ENTRY_TOKEN_ISSUER")
	room := fs.String("room", "", "accept tokens of this room only")
	anyRoom := fs.Bool("any-room", false, "accept tokens of every room (instead of -room)")
	err := fs.Parse(args)
	oneOf := (*room != "") != *anyRoom // exactly one of -room and -any-room
	if err != nil || fs.NArg() != 1 || *jwks == "" || !oneOf {
		fmt.Fprintln(stderr, "usage: entrytoken-verify -jwks URL [-issuer ISS] -room ROOM|-any-room TOKEN")
		return 2
	}
	v := &entrytoken.Verifier{JWKSURL: *jwks, Issuer: *issuer, Room: *room, AnyRoom: *anyRoom}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := v.Verify(ctx, fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "refused:", err)
		return 1
	}
	out, _ := json.Marshal(c)
	fmt.Fprintln(stdout, string(out))
	return 0
}
