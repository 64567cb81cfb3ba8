package cost

import "testing"

func TestFragmentsAndHandFigures(t *testing.T) {
	doc := []byte("intro $1 here\n<!-- begin a: x -->\n| $2 |\n<!-- end a -->\nmid\n<!-- begin b-c: y -->\n<!-- end b-c -->\n")
	got, err := Fragments(doc)
	if err != nil || len(got) != 2 || got["a"] != "| $2 |\n" || got["b-c"] != "" {
		t.Fatalf("fragments %q, %v", got, err)
	}
	if hand := HandFigures(doc); len(hand) != 1 || hand[0] != "intro $1 here" {
		t.Errorf("hand figures %q, want the intro line alone", hand)
	}
	if _, err := Fragments([]byte("<!-- begin a: x -->\n<!-- end b -->\n")); err == nil {
		t.Error("a block ending under another name was accepted")
	}
	for n, want := range map[float64]string{0: "0", 999: "999", 43800: "43,800", 3062978: "3,062,978"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%v) = %s, want %s", n, got, want)
		}
	}
}
