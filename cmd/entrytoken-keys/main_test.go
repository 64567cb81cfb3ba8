package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entrytoken"
)

// output runs the command and returns its two values.
func output(t *testing.T, stdin string, args ...string) (seeds, public string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, strings.NewReader(stdin), &out, &errOut); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ENTRY_TOKEN_KEYS=") || !strings.HasPrefix(lines[1], "ENTRY_TOKEN_PUBLIC_KEYS=") {
		t.Fatalf("%v: output %q, want ENTRY_TOKEN_KEYS=… and ENTRY_TOKEN_PUBLIC_KEYS=…", args, out.String())
	}
	return strings.TrimPrefix(lines[0], "ENTRY_TOKEN_KEYS="), strings.TrimPrefix(lines[1], "ENTRY_TOKEN_PUBLIC_KEYS=")
}

// verifies reports whether a token signed with seeds' current key verifies
// with public alone, as the order gate checks it.
func verifies(t *testing.T, seeds, public string) bool {
	t.Helper()
	signer, err := entrytoken.ParseKeys(seeds, "i")
	if err != nil {
		t.Fatal(err)
	}
	gate, err := entrytoken.ParsePublicKeys(public, "i")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := signer.Sign(entrytoken.Claims{Subject: "s", Room: "r", ID: "AAAAAAAAAAAAAAAAAAAAAA", ExpiresAt: time.Now().Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gate.Verify(tok, time.Now())
	return err == nil && !gate.CanSign()
}

// A fresh key, a rotation (new first, the current one second, the older
// dropped) and the public keys of a value: each pair verifies as the gate
// verifies, and the command never takes a seed on its command line.
func TestKeysRotationAndPublicKeys(t *testing.T) {
	seeds, public := output(t, "")
	if strings.Contains(seeds, ",") || !verifies(t, seeds, public) {
		t.Fatalf("fresh: %d-character seed, public %q", len(seeds), public)
	}
	rotated, rotatedPublic := output(t, seeds+",someolderkey\n", "-rotate")
	parts := strings.Split(rotated, ",")
	if len(parts) != 2 || parts[0] == seeds || parts[1] != seeds || !verifies(t, rotated, rotatedPublic) ||
		strings.Split(rotatedPublic, ",")[1] != public {
		t.Fatalf("rotate: %d keys, previous is the old current: %v", len(parts), len(parts) == 2 && parts[1] == seeds)
	}
	again, againPublic := output(t, rotated, "-public")
	if again != rotated || againPublic != rotatedPublic {
		t.Errorf("-public of the rotated value: %q, want %q", againPublic, rotatedPublic)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
	}{
		{"", []string{"-rotate"}, 1},
		{"not base64!\n", []string{"-public"}, 1},
		{"", []string{"-rotate", "-public"}, 2},
		{"", []string{seeds}, 2},
	} {
		var out, errOut bytes.Buffer
		if code := run(c.args, strings.NewReader(c.stdin), &out, &errOut); code != c.code || out.Len() != 0 || strings.Contains(errOut.String(), seeds) {
			t.Errorf("%v with %q: exit %d, output %q, errors %q", c.args, c.stdin, code, out.String(), errOut.String())
		}
	}
}
