package waitroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Settings are one room's live settings, stored with its line. A room
// without stored settings runs on the environment's (Config.RoomDefaults).
type Settings struct {
	RatePerSec           float64    `json:"ratePerSec"`
	Capacity             int64      `json:"capacity"`
	EntryTokenTTLSeconds int64      `json:"entryTokenTtlSeconds"`
	MaxActive            int64      `json:"maxActive"` // 0: no cap on live entry tokens
	Paused               bool       `json:"paused"`
	OpensAt              *time.Time `json:"opensAt"` // nil: open now
	// Closed: sold out. Newcomers are refused (ERoomClosed), the line is
	// told CLOSED and released; live entry tokens stay valid.
	Closed bool `json:"closed"`
	// Message is plain text for everyone in line (and in a closed room's
	// answers); empty: none.
	Message string `json:"message"`
	// Adaptive: the admitter moves the effective rate within its bounds
	// after the order API's health, starting from RatePerSec; nil: the
	// fixed RatePerSec.
	Adaptive *Adaptive `json:"adaptive"`
	// InstantAdmit: an enter that finds nobody waiting, in an open room
	// whose rate budget and maxActive allow, is admitted at once (READY
	// in the enter's answer). Default INSTANT_ADMIT (true).
	InstantAdmit bool `json:"instantAdmit"`
	Page
}

// Limits of each setting; the environment's variables have the same ones.
const (
	maxCapacity              = 1_000_000_000
	minTokenTTL, maxTokenTTL = 1, 86_400
	// MaxMessageLen and MaxTitleLen are in characters (Unicode code points).
	MaxMessageLen, MaxTitleLen = 500, 80
)

var brandColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// RoomDefaults are the settings of rooms an operator has not configured.
func (c Config) RoomDefaults() Settings {
	return Settings{RatePerSec: c.AdmitRatePerSec, Capacity: c.QueueCapacity, EntryTokenTTLSeconds: int64(c.EntryTokenTTL.Seconds()),
		InstantAdmit: c.InstantAdmit}
}

// Validate names the first field out of range.
func (s Settings) Validate() error {
	switch {
	case math.IsNaN(s.RatePerSec) || s.RatePerSec < minRate || s.RatePerSec > maxRate:
		return invalidSetting("ratePerSec", fmt.Sprintf("must be a number from %g to %g", float64(minRate), float64(maxRate)))
	case s.Capacity < 1 || s.Capacity > maxCapacity:
		return invalidSetting("capacity", fmt.Sprintf("must be a whole number from 1 to %d", maxCapacity))
	case s.EntryTokenTTLSeconds < minTokenTTL || s.EntryTokenTTLSeconds > maxTokenTTL:
		return invalidSetting("entryTokenTtlSeconds", fmt.Sprintf("must be a whole number from %d to %d", minTokenTTL, maxTokenTTL))
	case s.MaxActive < 0 || s.MaxActive > maxCapacity:
		return invalidSetting("maxActive", fmt.Sprintf("must be a whole number from 0 (no cap) to %d", maxCapacity))
	case utf8.RuneCountInString(s.Message) > MaxMessageLen || !plainText(s.Message, true):
		return invalidSetting("message", fmt.Sprintf("must be plain text of at most %d characters", MaxMessageLen))
	case utf8.RuneCountInString(s.Title) > MaxTitleLen || !plainText(s.Title, false):
		return invalidSetting("title", fmt.Sprintf("must be plain text of at most %d characters on one line", MaxTitleLen))
	case s.BrandColor != "" && !brandColor.MatchString(s.BrandColor):
		return invalidSetting("brandColor", "must be a colour #rrggbb (or empty)")
	case s.Language != "" && s.Language != "en" && s.Language != "ko":
		return invalidSetting("language", "must be en or ko (or empty: en)")
	}
	if s.LogoURL != "" {
		if _, err := ImageOrigin(s.LogoURL); err != nil {
			return invalidSetting("logoUrl", err.Error())
		}
	}
	if s.Adaptive != nil {
		return s.Adaptive.Validate()
	}
	return nil
}

// plainText: valid UTF-8 without control characters (newlines allowed
// where lines is true).
func plainText(s string, lines bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(lines && r == '\n') {
			return false
		}
	}
	return true
}

// ImageOrigin is the origin (https://host[:port]) of an image URL: https,
// a host, no user info, at most 2,000 characters.
func ImageOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || len(raw) > 2000 || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", errors.New("must be an https URL (or empty)")
	}
	return "https://" + strings.ToLower(u.Host), nil
}

// CheckLogoOrigin refuses a logo on an origin the page may not load images
// from (PAGE_IMAGE_ORIGINS, the page's Content-Security-Policy img-src).
func (s Settings) CheckLogoOrigin(allowed []string) error {
	if s.LogoURL == "" {
		return nil
	}
	origin, err := ImageOrigin(s.LogoURL)
	if err != nil {
		return invalidSetting("logoUrl", err.Error())
	}
	if !slices.Contains(allowed, origin) {
		if len(allowed) == 0 {
			return invalidSetting("logoUrl", "is on "+origin+", but no image origin is allowed (PAGE_IMAGE_ORIGINS; the stack's context pageImageOrigins)")
		}
		return invalidSetting("logoUrl", "is on "+origin+", not one of the allowed image origins "+strings.Join(allowed, ", ")+" (PAGE_IMAGE_ORIGINS)")
	}
	return nil
}

// An opening given in a change must lie within a day before now (a room
// reopened a moment late) and a year after: year 9999 or year 1 is a typo.
const (
	opensAtPast   = 24 * time.Hour
	opensAtFuture = 365 * 24 * time.Hour
)

// ApplySettingsJSON changes the fields a JSON object names and leaves the
// others as they are: PUT applies it to the defaults, PATCH to the stored
// settings; but closed turned false clears the message unless one is given. Unknown fields, wrong types and bad times (an opening given
// more than a day before now or a year after it) are refused by name.
func ApplySettingsJSON(s Settings, body []byte, now time.Time) (Settings, error) {
	wasClosed := s.Closed
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		return s, Errorf(EInvalidSettings, "the body must be one JSON object of settings")
	}
	for name, raw := range fields {
		i := slices.IndexFunc(settingFields, func(f settingField) bool { return f.name == name })
		if i < 0 {
			return s, invalidSetting(name, "is not a setting ("+settingNames()+")")
		}
		err := settingFields[i].set(&s, raw, now)
		if e := (*Error)(nil); errors.As(err, &e) {
			return s, err
		}
		if err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) && name != "opensAt" && name != "adaptive" {
			return s, invalidSetting(name, "has the wrong type: "+settingTypes[name])
		}
	}
	// Reopening clears the closing message unless the same change gives a
	// new one: a fresh line must not read "Sold out" beside "It's your turn".
	if _, given := fields["message"]; wasClosed && !s.Closed && !given {
		s.Message = ""
	}
	return s, s.Validate()
}

// settingField is a field of the admin API's settings and how a change
// reads it; an *Error from set is the answer as it is.
type settingField struct {
	name string
	set  func(s *Settings, raw json.RawMessage, now time.Time) error
}

// settingFields are the settings an operator may change, in the order a
// refusal lists them.
var settingFields = []settingField{
	{"ratePerSec", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.RatePerSec) }},
	{"capacity", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.Capacity) }},
	{"entryTokenTtlSeconds", func(s *Settings, raw json.RawMessage, _ time.Time) error {
		return json.Unmarshal(raw, &s.EntryTokenTTLSeconds)
	}},
	{"maxActive", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.MaxActive) }},
	{"paused", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.Paused) }},
	{"opensAt", setOpensAt},
	{"closed", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.Closed) }},
	{"message", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.Message) }},
	{"title", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.Title) }},
	{"brandColor", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.BrandColor) }},
	{"logoUrl", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.LogoURL) }},
	{"language", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.Language) }},
	{"adaptive", func(s *Settings, raw json.RawMessage, _ time.Time) (err error) {
		s.Adaptive, err = parseAdaptiveJSON(raw)
		return err
	}},
	{"instantAdmit", func(s *Settings, raw json.RawMessage, _ time.Time) error { return json.Unmarshal(raw, &s.InstantAdmit) }},
}

func settingNames() string {
	names := make([]string, len(settingFields))
	for i, f := range settingFields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// setOpensAt reads opensAt: a time within a day before now and a year after it, or null.
func setOpensAt(s *Settings, raw json.RawMessage, now time.Time) (err error) {
	if s.OpensAt, err = parseOpensAt(raw); err == nil && s.OpensAt != nil && (s.OpensAt.Before(now.Add(-opensAtPast)) || s.OpensAt.After(now.Add(opensAtFuture))) {
		return invalidSetting("opensAt", "must be within a day before now and a year after it (or null)")
	}
	return err
}

var settingTypes = map[string]string{
	"ratePerSec": "a number", "capacity": "a whole number", "entryTokenTtlSeconds": "a whole number",
	"maxActive": "a whole number", "paused": "true or false", "opensAt": "an RFC 3339 time or null",
	"closed": "true or false", "message": "a string", "instantAdmit": "true or false", "title": "a string", "brandColor": "a string",
	"logoUrl": "a string", "language": "a string",
	"adaptive": `null or {"targetP95Ms": whole ms, "minRatePerSec": number, "maxRatePerSec": number}, all three`,
}

// parseAdaptiveJSON reads adaptive: null, or an object with exactly its
// three fields (a bound left out would silently be 0).
func parseAdaptiveJSON(raw json.RawMessage) (*Adaptive, error) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) != 3 {
		return nil, errors.New("not the adaptive object")
	}
	var a Adaptive
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, err
	}
	return &a, nil
}

func parseOpensAt(raw json.RawMessage) (*time.Time, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	if err != nil {
		return nil, err
	}
	t = t.UTC().Truncate(time.Millisecond) // the store keeps milliseconds
	return &t, nil
}

// RoomState is what a room does now.
type RoomState string

const (
	StateOpen     RoomState = "open"
	StatePaused   RoomState = "paused"
	StatePreQueue RoomState = "prequeue"
	StateClosed   RoomState = "closed"
)

// RoomStatus is a room's settings and what is happening in it.
type RoomStatus struct {
	Room string `json:"room"`
	Settings
	State              RoomState `json:"state"`
	Waiting            int64     `json:"waiting"`   // in line, pre-queue excluded
	PreQueued          int64     `json:"prequeued"` // waiting for the opening
	ActiveTokens       int64     `json:"activeTokens"`
	AdmittedLastMinute int64     `json:"admittedLastMinute"`
	// AdmittedPerSec is the admissions of the last five whole seconds per
	// second: the live rate, where admittedLastMinute is the minute's sum.
	AdmittedPerSec    float64 `json:"admittedPerSec"`
	OldestWaitSeconds int64   `json:"oldestWaitSeconds"`
	// EffectiveRatePerSec is the rate admission uses now: the adaptive
	// rate, or RatePerSec.
	EffectiveRatePerSec float64 `json:"effectiveRatePerSec"`
	// DownstreamP95Ms and DownstreamErrorRate are the order gate's
	// measurements of the order API over the last control window
	// (AdaptWindow); nil when no order finished in it.
	DownstreamP95Ms     *int64   `json:"downstreamP95Ms"`
	DownstreamErrorRate *float64 `json:"downstreamErrorRate"`
}

// SettingsChange is one operator change, for the audit log.
type SettingsChange struct {
	Old, New Settings
	Created  bool // the room had no stored settings
}

// Rooms is the operators' side of the store.
type Rooms interface {
	// List returns the status of every room an operator created or in
	// which someone waits or holds a token.
	List(ctx context.Context) ([]RoomStatus, error)
	// Status reports one room; ERoomNotFound when the room does not exist.
	Status(ctx context.Context, room string) (RoomStatus, error)
	// Update applies change to the room's settings (the stored ones, or
	// the defaults) atomically and stores the result. create allows a room
	// that does not exist yet (PUT); otherwise it is ERoomNotFound.
	Update(ctx context.Context, room string, create bool, change func(Settings) (Settings, error)) (SettingsChange, error)
}
