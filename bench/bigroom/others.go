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
	return figure(path, pollField, "make bench-redis-cost")
}

// pageCalls is function calls per visitor through the page, from
// bench/pagecalls' results (make bench-page-calls).
func pageCalls(path string) sim.BigRoomFigure {
	return figure(path, pageField, "make bench-page-calls")
}

// figure reads the number at fields in the JSON file at path.
func figure(path string, fields []string, made string) sim.BigRoomFigure {
	f := sim.BigRoomFigure{Source: fmt.Sprintf("%s: %s (%s)", path, join(fields), made)}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Note = "not measured: " + path + " is absent"
		return f
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		f.Note = fmt.Sprintf("not measured: %s: %v", path, err)
		return f
	}
	for _, name := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			v = nil
			break
		}
		v = m[name]
	}
	x, ok := v.(float64)
	if !ok {
		f.Note = fmt.Sprintf("not measured: %s holds no %s", path, join(fields))
		return f
	}
	f.Measured, f.Value, f.Note = true, x, "read from "+path
	return f
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
