// Command waitroomctl is the operator's command: it reads and changes room
// settings through the admin API (docs/API.md, "Admin API" and
// "waitroomctl"), and watches a live sale.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const usage = `usage: waitroomctl [flags] COMMAND
commands:
  rooms                 every room, one line each
  get ROOM              a room's settings and status
  set ROOM [--rate N] [--capacity N] [--max-active N] [--token-ttl SECONDS]
           [--opens-at RFC3339|+DURATION|none] [--paused true|false] [--instant-admit true|false]
           [--message TEXT] [--title TEXT] [--brand-color #rrggbb] [--logo-url URL] [--language en|ko]
           [--adaptive-target-p95 DURATION --min-rate N --max-rate N] [--adaptive off]
                        create the room, or change only the given settings
           (an empty value, --message '', clears a text setting; the three adaptive
           flags together turn adaptive admission on, one alone changes that bound)
  close ROOM [--message TEXT]   sold out: refuse newcomers, tell the line CLOSED
  reopen ROOM [--message TEXT]  a fresh line; the sold-out message goes unless --message gives one
  pause ROOM            admit nobody until resumed
  resume ROOM           admit again, in the same order
  watch [ROOM]          live view, refreshed every second (Ctrl-C ends it)
flags:
  --url URL             admin API base URL (env WAITROOM_URL, default http://127.0.0.1:8080)
  --token TOKEN         admin token (env WAITROOM_ADMIN_TOKEN)
  --aws                 sign with SigV4 from the default AWS credential chain
  --json                print the API's JSON
  -h, --help            this text
`

// Exit statuses: the server or the network said no; the command line is wrong.
const (
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, http: http.DefaultClient}))
}

// env is what a run uses of the world; tests give their own.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	http           *http.Client
	every          time.Duration // watch's refresh; 0 is one second
}

// options are the flags of every command, and set's settings.
type options struct {
	url, token    string
	aws, json     bool
	help          bool           // -h, --help or help: print the usage
	settings      map[string]any // set's flags, by API field name
	adaptive      adaptiveFlags
	positionals   []string
	settingsFlags []string
}

// run executes one command line and returns the exit status. Errors are
// one line on stderr.
func run(ctx context.Context, args []string, e env) int {
	o, err := parseArgs(args, e.getenv)
	if o.help { // asked for: the usage on stdout, and success
		fmt.Fprint(e.stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "waitroomctl: %v (waitroomctl with no command prints the usage)\n", err)
		return exitUsage
	}
	if len(o.positionals) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitUsage
	}
	c, err := newClient(ctx, o, e.http)
	if err != nil {
		fmt.Fprintf(e.stderr, "waitroomctl: %v\n", err)
		return exitFailed
	}
	err = dispatch(ctx, c, o, e)
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "waitroomctl: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(e.stderr, "waitroomctl: %v\n", err)
		return exitFailed
	}
	return 0
}

// commands says how many positionals each command takes.
var commands = map[string]struct {
	min, max int
	synopsis string
}{
	"rooms": {0, 0, "rooms"}, "get": {1, 1, "get ROOM"}, "set": {1, 1, "set ROOM --rate N …"},
	"pause": {1, 1, "pause ROOM"}, "resume": {1, 1, "resume ROOM"}, "watch": {0, 1, "watch [ROOM]"},
	"close": {1, 1, "close ROOM [--message TEXT]"}, "reopen": {1, 1, "reopen ROOM [--message TEXT]"},
}

// onlyMessage: the only setting close and reopen take is --message.
func onlyMessage(flags []string) bool {
	return len(flags) == 1 && flags[0] == "message"
}

type usageError string

func (u usageError) Error() string { return string(u) }

func dispatch(ctx context.Context, c *client, o options, e env) error {
	cmd, rest := o.positionals[0], o.positionals[1:]
	spec, known := commands[cmd]
	switch {
	case !known:
		return usageError(fmt.Sprintf("unknown command %q (rooms, get, set, pause, resume, close, reopen, watch)", cmd))
	case len(rest) < spec.min || len(rest) > spec.max:
		return usageError("usage: waitroomctl " + spec.synopsis)
	case (cmd == "close" || cmd == "reopen") && len(o.settingsFlags) > 0 && !onlyMessage(o.settingsFlags):
		return usageError(fmt.Sprintf("%s takes --message alone, not --%s", cmd, o.settingsFlags[0]))
	case cmd != "set" && cmd != "close" && cmd != "reopen" && len(o.settingsFlags) > 0:
		return usageError(fmt.Sprintf("--%s only goes with set", o.settingsFlags[0]))
	case cmd == "set" && len(o.settings) == 0 && !o.adaptive.given():
		return usageError("set needs at least one of --rate, --capacity, --max-active, --token-ttl, --opens-at, --paused, --instant-admit, --message, --title, --brand-color, --logo-url, --language, --adaptive-target-p95, --min-rate, --max-rate, --adaptive")
	}
	out := printer{w: e.stdout, json: o.json}
	switch cmd {
	case "rooms":
		return out.list(c.get(ctx, "/admin/rooms"))
	case "get":
		return out.room(settingsOf(rest[0])(c.get(ctx, "/admin/rooms/"+rest[0])))
	case "set":
		if err := o.adaptive.apply(ctx, c, rest[0], o.settings); err != nil {
			return err
		}
		return out.room(c.set(ctx, rest[0], o.settings))
	case "pause", "resume":
		return out.room(settingsOf(rest[0])(c.send(ctx, http.MethodPost, "/admin/rooms/"+rest[0]+"/"+cmd, nil)))
	case "close", "reopen":
		o.settings["closed"] = cmd == "close"
		body, err := json.Marshal(o.settings)
		if err != nil {
			return err
		}
		return out.room(settingsOf(rest[0])(c.send(ctx, http.MethodPatch, "/admin/rooms/"+rest[0], body)))
	}
	room := ""
	if len(rest) == 1 {
		room = rest[0]
	}
	every := e.every
	if every == 0 {
		every = time.Second
	}
	return watch(ctx, c, room, every, e.stdout)
}

// settingsOf words a room_not_found for an operator: nobody created the
// room (under OPEN_ROOMS=true visitors may have used it, but it has no
// settings and is gone once nobody waits or holds a token), and the
// command that creates it is waitroomctl set, not the API's PUT.
func settingsOf(room string) func([]byte, error) ([]byte, error) {
	return func(body []byte, err error) ([]byte, error) {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == "room_not_found" {
			ae.Message = fmt.Sprintf("there is no room %q (a room only visitors used, under OPEN_ROOMS=true, has no settings and is gone once they are): create it with waitroomctl set %s --rate N", room, room)
		}
		return body, err
	}
}

// parseArgs reads flags before, between and after the positionals.
func parseArgs(args []string, getenv func(string) string) (options, error) {
	o := options{settings: map[string]any{}}
	fs := flag.NewFlagSet("waitroomctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.url, "url", envOr(getenv, "WAITROOM_URL", "http://127.0.0.1:8080"), "")
	fs.StringVar(&o.token, "token", getenv("WAITROOM_ADMIN_TOKEN"), "")
	fs.BoolVar(&o.aws, "aws", false, "")
	fs.BoolVar(&o.json, "json", false, "")
	settingFlags := map[string]string{"rate": "ratePerSec", "capacity": "capacity", "max-active": "maxActive",
		"token-ttl": "entryTokenTtlSeconds", "opens-at": "opensAt", "paused": "paused", "instant-admit": "instantAdmit",
		"message": "message", "title": "title", "brand-color": "brandColor", "logo-url": "logoUrl", "language": "language"}
	for name, field := range settingFlags {
		fs.Func(name, "", func(v string) error { return setting(o.settings, field, v) })
	}
	o.adaptive.define(fs)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return options{help: true}, nil
			}
			return o, err
		}
		if fs.NArg() == 0 {
			break
		}
		o.positionals = append(o.positionals, fs.Arg(0))
		args = fs.Args()[1:]
	}
	o.help = len(o.positionals) == 1 && o.positionals[0] == "help"
	fs.Visit(func(f *flag.Flag) {
		if _, ok := settingFlags[f.Name]; ok || adaptiveFlagNames[f.Name] {
			o.settingsFlags = append(o.settingsFlags, f.Name)
		}
	})
	return o, nil
}

// setting turns a flag's text into the JSON value of its field; the server
// checks the ranges and names the field when one is off.
func setting(into map[string]any, field, v string) error {
	switch field {
	case "message", "title", "brandColor", "logoUrl", "language": // text: the server checks it
		into[field] = v
		return nil
	case "ratePerSec":
		f, err := strconv.ParseFloat(v, 64)
		into[field] = f
		return err
	case "paused", "instantAdmit":
		b, err := strconv.ParseBool(v)
		into[field] = b
		return err
	case "opensAt":
		if strings.EqualFold(v, "none") || v == "" {
			into[field] = nil
			return nil
		}
		if rest, ok := strings.CutPrefix(v, "+"); ok { // +2h: that long from now
			d, err := time.ParseDuration(rest)
			if err != nil || d <= 0 {
				return fmt.Errorf("+DURATION is a positive Go duration such as +2h or +90m")
			}
			into[field] = time.Now().Add(d).UTC().Truncate(time.Second).Format(time.RFC3339)
			return nil
		}
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return fmt.Errorf("not an RFC 3339 time (2026-11-27T00:00:00Z), +DURATION (+2h) or none")
		}
		into[field] = v
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	into[field] = n
	return err
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
