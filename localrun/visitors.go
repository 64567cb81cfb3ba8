package localrun

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/localrun/checkout"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/web"
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

// visitorRoutes adds what a browser sees: the waiting page, the demo
// checkout (when CONTINUE_URL is unset) and the live stream. It returns the
// admitter's OnBatch, which tells the streams of an admission at once, and a
// function that ends every open stream, for a prompt shutdown.
func (r *Runner) visitorRoutes(mux *http.ServeMux, api *httpapi.API, store *redisstore.Store) (onBatch func(waitroom.Batch), endStreams func()) {
	settings := web.Settings{ContinueURL: r.Config.Visitor.ContinueURL, Stream: true, ImageOrigins: r.Config.PageImageOrigins}
	if settings.ContinueURL == "" {
		settings.ContinueURL = checkout.ContinueURL
		shop := checkout.Handler()
		mux.Handle("GET /checkout", shop)
		mux.Handle("GET /checkout/", shop)
	}
	page := web.Handler(settings)
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /index.html", page)
	mux.Handle("GET /waitroom/", page)

	ctx, cancel := context.WithCancel(context.Background())
	h := newHub(store, r.Config.AdmitInterval, httpapi.DefaultStoreTimeout)
	r.streams = newStreamCaps(r.Config.Trust.Streams)
	mux.Handle("GET /queue/events", &events{api: api, seats: store, hub: h, caps: r.streams, done: ctx.Done()})
	return h.admitted, cancel
}
