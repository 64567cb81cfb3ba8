package redisstore

import "time"

// SetLimiterClock makes s stamp its limiter's calls with now (ratelimit.go,
// limited): tests deliver stamps to the store in an order of their choosing.
func SetLimiterClock(s *Store, now func() time.Time) { s.now = now }
