package waitroom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
)

func TestReceiptSignVerify(t *testing.T) {
	k := keys(t, keyOf(t, 1))
	e := waitroom.Entry{Room: "shoes", User: "alice.smith:42", AcceptedAt: time.UnixMicro(t0.UnixMicro() + 123)}
	r, err := k.SignReceipt(e, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.VerifyReceipt(r, t0)
	if err != nil || got != e {
		t.Fatalf("verify: %+v %v, want %+v", got, err, e)
	}
	// The previous key still verifies during a rotation.
	rotated := keys(t, keyOf(t, 2)+","+keyOf(t, 1))
	if got, err := rotated.VerifyReceipt(r, t0); err != nil || got != e {
		t.Fatalf("after rotation: %+v %v", got, err)
	}
	ticket, _ := k.Sign("v-abc", t0, t0.Add(time.Hour), waitroom.Spot{})
	parts := strings.Split(r, ".")
	for name, bad := range map[string]string{
		"expired":      "",
		"other key":    "",
		"altered room": strings.Replace(r, ".shoes.", ".boots.", 1),
		"altered time": strings.Join(append(append([]string{}, parts[:4]...), "1", parts[5], parts[6]), "."),
		"a ticket":     ticket,
		"empty":        "",
		"truncated":    r[:len(r)-2],
	} {
		now, keys := t0, k
		switch name {
		case "expired":
			bad, now = r, t0.Add(time.Hour)
		case "other key":
			bad, keys = r, waitroom.TicketKeys{Current: waitroom.NewTicketKey([]byte(strings.Repeat("x", 32)))}
		}
		if _, err := keys.VerifyReceipt(bad, now); waitroom.ErrorCode(err) != waitroom.EInvalidReceipt {
			t.Errorf("%s: %v, want invalid_receipt", name, err)
		}
	}
}

func TestEntryDedupIDPerRoomAndIdentity(t *testing.T) {
	a := waitroom.Entry{Room: "r", User: "u", AcceptedAt: t0}
	b := waitroom.Entry{Room: "r", User: "u", AcceptedAt: t0.Add(time.Second)}
	c := waitroom.Entry{Room: "r-u", User: ""}
	d := waitroom.Entry{Room: "r", User: "u2"}
	if a.DedupID() != b.DedupID() || a.DedupID() == c.DedupID() || a.DedupID() == d.DedupID() || len(a.DedupID()) > 128 {
		t.Fatal("one deduplication id per room and identity, at most 128 characters")
	}
}

func TestIntakeConfig(t *testing.T) {
	base := map[string]string{"REDIS_URL": "redis://localhost:6379", "TICKET_SECRET": keyOf(t, 1)}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	c, err := envconfig.Load(env(with("INTAKE", "fallback", "INTAKE_QUEUE_URL", "https://sqs.eu-west-1.amazonaws.com/1/q.fifo")), envconfig.Function)
	if err != nil || c.Intake != waitroom.IntakeFallback {
		t.Fatalf("fallback: %+v %v", c.Intake, err)
	}
	for want, kv := range map[string][]string{
		"INTAKE must be direct":             {"INTAKE", "kafka"},
		"INTAKE_QUEUE_URL is required":      {"INTAKE", "broker"},
		"INTAKE_QUEUE_URL \"q\" is not":     {"INTAKE", "broker", "INTAKE_QUEUE_URL", "q"},
		"TICKET_SECRET is required when IN": {"INTAKE", "broker", "INTAKE_QUEUE_URL", "http://127.0.0.1:1/q", "TICKET_SECRET", ""},
	} {
		if _, err := envconfig.Load(env(with(kv...)), envconfig.Function); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", kv, err, want)
		}
	}
}
