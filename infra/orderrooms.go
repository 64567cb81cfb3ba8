package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// Which rooms the order gate sells in (ORDER_ROOMS, context orderRooms;
// issue 32). Unset, only rooms an operator created: a visitor's own room
// (openRooms), reached at once by instant admission, never buys the sale's
// product. "*" is every room, and is refused with openRooms, where it
// would let any visitor buy by opening a room of its own.

// validateOrderRooms checks orderRooms: room names, or * alone, and never
// * with rooms visitors may open.
func (p WaitroomProps) validateOrderRooms() error {
	for _, room := range p.OrderRooms {
		switch {
		case room == waitroom.AnyRoom && len(p.OrderRooms) > 1:
			return fmt.Errorf("waitroom: context %s=%s: * (every room) stands alone, or name the rooms", CtxOrderRooms, strings.Join(p.OrderRooms, ","))
		case room == waitroom.AnyRoom && p.OpenRooms:
			return fmt.Errorf("waitroom: context %s=* with %s=true: any visitor could open a room of its own, be admitted at once and buy the sale's "+
				"product with its token; name the sale's rooms in %s, or leave it unset (only rooms an operator created sell)", CtxOrderRooms, CtxOpenRooms, CtxOrderRooms)
		case room != waitroom.AnyRoom && !waitroom.ValidRoom(room):
			return fmt.Errorf("waitroom: context %s: %q is not a room (^[a-z0-9][a-z0-9-]{0,63}$)", CtxOrderRooms, room)
		}
	}
	return nil
}

// orderRoomsEnv is the order gate's ORDER_ROOMS: unset by default.
func orderRoomsEnv(p WaitroomProps, fn string) map[string]*string {
	if fn != FnOrderGate || len(p.OrderRooms) == 0 {
		return nil
	}
	return map[string]*string{"ORDER_ROOMS": jsii.String(strings.Join(p.OrderRooms, ","))}
}

// orderRoomsOutput is the OrderRooms output: which rooms' tokens buy.
func orderRoomsOutput(p WaitroomProps) string {
	switch {
	case len(p.OrderRooms) == 0:
		return "rooms an operator created (ORDER_ROOMS unset)"
	case slices.Contains(p.OrderRooms, waitroom.AnyRoom):
		return "* (every room)"
	}
	return strings.Join(p.OrderRooms, ",")
}
