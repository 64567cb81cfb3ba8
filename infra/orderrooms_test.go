package main

import (
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// Issue 32: the stack says which rooms the order gate sells in. By default
// it sets no ORDER_ROOMS: only rooms an operator created sell, and the
// OrderRooms output says so; context orderRooms names rooms (or *), given
// to the gate alone.
func TestOrderRoomsContext(t *testing.T) {
	for _, fn := range def(t).w.Props.FunctionNames() {
		if v, ok := def(t).env(t, fn)["ORDER_ROOMS"]; ok {
			t.Errorf("%s: ORDER_ROOMS = %v by default, want unset (only rooms an operator created sell)", fn, v)
		}
	}
	def(t).tpl.HasOutput(jsii.String("OrderRooms"), map[string]any{"Value": "rooms an operator created (ORDER_ROOMS unset)"})

	p := mustProps(t, map[string]any{CtxOrderRooms: "tv-launch, tv"})
	if js(p.OrderRooms) != `["tv-launch","tv"]` {
		t.Fatalf("orderRooms=tv-launch, tv: %v", p.OrderRooms)
	}
	s := synthesize(t, func(q *WaitroomProps) { q.OrderRooms = p.OrderRooms })
	if got := s.env(t, FnOrderGate)["ORDER_ROOMS"]; got != "tv-launch,tv" {
		t.Errorf("order gate ORDER_ROOMS = %v, want tv-launch,tv", got)
	}
	if _, ok := s.env(t, FnEnter)["ORDER_ROOMS"]; ok {
		t.Error("enter got ORDER_ROOMS: it is the order gate's alone")
	}
	s.tpl.HasOutput(jsii.String("OrderRooms"), map[string]any{"Value": "tv-launch,tv"})
}

// * (every room, the old default) is refused in synth with openRooms,
// where any visitor opens a room of its own, is admitted at once and would
// buy the sale's product; alone, it is allowed; a bad name is refused.
func TestOrderRoomsRefusals(t *testing.T) {
	valid := func(mutate func(*WaitroomProps)) error {
		p := baseProps()
		mutate(&p)
		return p.WithDefaults("Waitroom").Validate()
	}
	err := valid(func(p *WaitroomProps) { p.OrderRooms, p.OpenRooms = []string{"*"}, true })
	if err == nil || !strings.Contains(err.Error(), "orderRooms=*") || !strings.Contains(err.Error(), "openRooms=true") {
		t.Errorf("orderRooms=* with openRooms=true: %v, want a refusal naming both", err)
	}
	if err := valid(func(p *WaitroomProps) { p.OrderRooms = []string{"*"} }); err != nil {
		t.Errorf("orderRooms=* without openRooms: %v", err)
	}
	if err := valid(func(p *WaitroomProps) { p.OrderRooms, p.OpenRooms = []string{"tv"}, true }); err != nil {
		t.Errorf("orderRooms=tv with openRooms: %v", err)
	}
	for _, bad := range [][]string{{"TV"}, {"tv", "*"}, {"-x"}} {
		if err := valid(func(p *WaitroomProps) { p.OrderRooms = bad }); err == nil || !strings.Contains(err.Error(), "orderRooms") {
			t.Errorf("orderRooms=%v: %v, want a refusal naming orderRooms", bad, err)
		}
	}
}
