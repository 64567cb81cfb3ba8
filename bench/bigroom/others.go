package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// The figures this tool reads from other measures' results, by file and
// path of fields. Nothing is estimated: a file or field that is absent
// leaves its figure "not measured".
var (
	pollField = []string{"httpPoll", "commandsPerPoll"} // bench/rediscost: INFO commandstats over polls through the handler
	pageField = []string{"wait30min", "functionCalls"}  // bench/pagecalls: a 30-minute wait through the page
)

// pollCommands is store commands per waiting poll through HTTP, from
// bench/rediscost's results (make bench-redis-cost).
func pollCommands(path string) sim.BigRoomFigure {
	f := figure(path, pollField, "make bench-redis-cost")
	if !f.Measured {
		return f
	}
	rate, ok1 := number(path, "httpPoll", "paced", "pollsPerSec")
	per, ok2 := number(path, "httpPoll", "paced", "commandsPerPoll")
	ahead, _ := number(path, "httpPoll", "ahead")
	f.Note = fmt.Sprintf("polls back to back through one process's position handler, behind %.0f users", ahead)
	if ok1 && ok2 {
		f.Note += fmt.Sprintf("; %.3f when the same polls come %.0f a second (the process reads the room's view at most every 100 ms, whatever its polls)", per, rate)
	}
	return f
}

// pageCalls is function calls per visitor through the page, from
// bench/pagecalls' results (make bench-page-calls).
func pageCalls(path string) sim.BigRoomFigure {
	f := figure(path, pageField, "make bench-page-calls")
	if longest, ok := number(path, "summary", "longestWaitSeconds"); ok && f.Measured {
		f.Note = fmt.Sprintf("the most measured through the page on waits of up to %.0f s, which the results' wait30min.model says stands for a 30-minute wait (function calls do not grow with the wait)", longest)
	}
	return f
}

// figure reads the number at fields in the JSON file at path.
func figure(path string, fields []string, made string) sim.BigRoomFigure {
	f := sim.BigRoomFigure{Source: fmt.Sprintf("%s: %s (%s)", path, join(fields), made)}
	if _, err := os.Stat(path); err != nil {
		f.Note = "not measured: " + path + " is absent"
		return f
	}
	x, ok := number(path, fields...)
	if !ok {
		f.Note = fmt.Sprintf("not measured: %s holds no %s", path, join(fields))
		return f
	}
	f.Measured, f.Value = true, x
	return f
}

// number is the number at fields in the JSON file at path, if it holds one.
func number(path string, fields ...string) (float64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, false
	}
	for _, name := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = m[name]
	}
	x, ok := v.(float64)
	return x, ok
}

func join(fields []string) string {
	s := ""
	for i, x := range fields {
		if i > 0 {
			s += "."
		}
		s += x
	}
	return s
}
