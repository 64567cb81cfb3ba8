package localrun

import (
	"fmt"
	"log/slog"

	"github.com/waitroom/waitroom"
)

// ticketKeys generates a ticket key when TICKET_SECRET is unset, and says
// so: tickets then last only as long as the process.
func ticketKeys(k waitroom.TicketKeys, log *slog.Logger) (waitroom.TicketKeys, error) {
	if k.Enabled() {
		return k, nil
	}
	secret, err := waitroom.GenerateTicketSecret()
	if err != nil {
		return k, fmt.Errorf("ticket key: %w", err)
	}
	log.Info("TICKET_SECRET unset: generated a ticket key for this process; visitors' tickets will not survive a restart (set TICKET_SECRET to keep them)")
	return waitroom.ParseTicketKeys(secret)
}
