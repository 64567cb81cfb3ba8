package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/redisstore"
)

// The poll through HTTP: store commands per waiting visitor's poll,
// through the position handler as a function runs it (issue 36).
const (
	pollRoom   = "polls"
	placeField = waitroom.PlaceHeader // an account's signed place (docs/API.md), sent back when an answer gave one
)

// pollClient is one visitor polling as the page does: an account (the
// authorizer's JWT sub) or an anonymous visitor (the ticket its enter
// gave it), sending back the ticket and the place each answer gives.
type pollClient struct {
	sub, ip       string // sub: the account's JWT subject ("" for an anonymous visitor)
	ticket, place string
}

// request is the client's next request to path.
func (c *pollClient) request(method, path string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{RawPath: path, RawQueryString: "room=" + pollRoom,
		QueryStringParameters: map[string]string{"room": pollRoom}, Headers: map[string]string{}}
	req.RequestContext.HTTP.Method, req.RequestContext.HTTP.Path, req.RequestContext.HTTP.SourceIP = method, path, c.ip
	if c.sub != "" {
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": c.sub}}}
	}
	if c.ticket != "" {
		req.Headers[waitroom.TicketHeader] = c.ticket
	}
	if c.place != "" {
		req.Headers[placeField] = c.place
	}
	return req
}

// keep reads an answer: WAITING expected; its ticket and place kept.
func (c *pollClient) keep(resp events.APIGatewayV2HTTPResponse) error {
	var body struct {
		Status string `json:"status"`
		Ticket string `json:"ticket"`
		Place  string `json:"place"`
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %d: %s", resp.StatusCode, resp.Body)
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		return err
	}
	if body.Status != string(waitroom.Waiting) {
		return fmt.Errorf("answered %s, want WAITING: %s", body.Status, resp.Body)
	}
	if body.Ticket != "" {
		c.ticket = body.Ticket
	}
	if body.Place != "" {
		c.place = body.Place
	}
	return nil
}

// pollConfig is the functions' configuration with anonymous visitors on
// (a ticket secret of the run's own) and the limiter at its defaults.
func pollConfig() (waitroom.Config, error) {
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return waitroom.Config{}, err
	}
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:6379", "ANONYMOUS_VISITORS": "true", "TICKET_SECRET": base64.StdEncoding.EncodeToString(key[:])}
	cfg, err := envconfig.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, envconfig.Function)
	cfg.Trust.Limits = waitroom.Limits{ClientRatePerSec: waitroom.DefaultClientRatePerSec, ClientBurst: waitroom.DefaultClientBurst,
		IPRatePerSec: waitroom.DefaultIPRatePerSec, IPBurst: waitroom.DefaultIPBurst}
	cfg.InstantAdmit = false
	return cfg, err
}

// measureHTTPPoll: on a plain redis-server, p.pollAhead users are put in
// one operator-created room's line (redisstore.Append), then p.pollVisitors
// visitors (half accounts, half anonymous) enter it through the enter
// handler; nobody admits. The users ahead keep the pollers out of the next
// batch, whose visitors' polls go to the store by design (their turn comes
// with it: they claim), as a real line's few at its head do. Then each polls p.pollRounds times through
// the position handler, every visitor once a round, carrying what its
// answers gave it (ticket, place); INFO commandstats before and after the
// polls (commands run inside scripts included, INFO itself left out), over
// the polls.
func measureHTTPPoll(ctx context.Context, p params) (*sim.RedisCostHTTPPoll, error) {
	res := &sim.RedisCostHTTPPoll{Visitors: p.pollVisitors, Ahead: p.pollAhead, Polls: p.pollVisitors * p.pollRounds}
	srv, err := sim.StartRedisWrapped(nil, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	cfg, err := pollConfig()
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 4, MaxRetries: -1})
	defer rdb.Close()
	store := redisstore.New(rdb, cfg)
	if err := fnstore.SetRoom(ctx, store, pollRoom, fnstore.RoomSettings(cfg, cfg.AdmitRatePerSec)); err != nil {
		return nil, err
	}
	ahead := make([]string, p.pollAhead)
	for i := range ahead {
		ahead[i] = uid('q', i)
	}
	if _, err := redisstore.Append(ctx, rdb, pollRoom, ahead); err != nil {
		return nil, err
	}
	api := &httpapi.API{Config: cfg, Queue: store}
	clients := make([]*pollClient, p.pollVisitors)
	for i := range clients {
		c := &pollClient{ip: ipOf('p', i)}
		if i%2 == 0 {
			c.sub = fmt.Sprintf("user-%06d", i)
		}
		if err := c.keep(api.Enter(ctx, c.request(http.MethodPost, "/queue/enter"))); err != nil {
			return nil, fmt.Errorf("enter of visitor %d: %w", i, err)
		}
		clients[i] = c
	}
	fast, err := pollPhase(ctx, rdb, api, clients, p.pollRounds, 0)
	if err != nil {
		return nil, err
	}
	res.Seconds, res.Commands, res.ByCommand, res.CommandsPerPoll = fast.Seconds, fast.Commands, fast.ByCommand, fast.CommandsPerPoll
	if p.pollRound > 0 {
		if res.Paced, err = pollPhase(ctx, rdb, api, clients, p.pollRounds, p.pollRound); err != nil {
			return nil, err
		}
	}
	res.Method = fmt.Sprintf("a plain redis-server; %d users put in one operator-created room's line (redisstore.Append), then %d visitors (half accounts by a JWT sub, half anonymous by the ticket their enter gave) "+
		"enter it through httpapi's enter handler (the functions' configuration, the limiter at its defaults, each visitor an address of its own), nobody admits; then %d rounds in which every visitor polls once, back to back (then again, each round spread over %s), "+
		"through the position handler of one process (httpapi.API), sending back the ticket and the place (%s) its answers gave it; INFO commandstats over the polls (commands inside scripts included, INFO left out). "+
		"A process reads a room's view at most every 100 ms whatever its polls: over polls spread wider than these, its reads are a larger share",
		p.pollAhead, p.pollVisitors, p.pollRounds, p.pollRound, placeField)
	return res, nil
}

// pollPhase polls rounds times through api's position handler, every
// client once a round, each round spread evenly over round (0: back to
// back), and counts the store's commands over the polls (INFO
// commandstats: those inside scripts included, INFO left out).
func pollPhase(ctx context.Context, rdb *redis.Client, api *httpapi.API, clients []*pollClient, rounds int, round time.Duration) (*sim.RedisCostPollPhase, error) {
	ph := &sim.RedisCostPollPhase{Polls: rounds * len(clients), ByCommand: map[string]int64{}}
	before, err := sim.CommandStats(ctx, rdb)
	if err != nil {
		return nil, err
	}
	gap := round / time.Duration(len(clients))
	t0 := time.Now()
	for r := range rounds {
		for i, c := range clients {
			if gap > 0 {
				time.Sleep(time.Until(t0.Add(time.Duration(r*len(clients)+i) * gap)))
			}
			if err := c.keep(api.Position(ctx, c.request(http.MethodGet, "/queue/position"))); err != nil {
				return nil, fmt.Errorf("poll %d of visitor %d: %w", r, i, err)
			}
		}
	}
	ph.Seconds = time.Since(t0).Seconds()
	after, err := sim.CommandStats(ctx, rdb)
	if err != nil {
		return nil, err
	}
	for cmd, n := range after {
		if d := n - before[cmd]; d > 0 && cmd != "info" {
			ph.ByCommand[cmd] = d
			ph.Commands += d
		}
	}
	ph.CommandsPerPoll = float64(ph.Commands) / float64(ph.Polls)
	ph.PollsPerSec = float64(ph.Polls) / ph.Seconds
	return ph, nil
}
