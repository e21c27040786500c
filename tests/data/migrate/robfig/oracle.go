// Command oracle answers, with the real robfig/cron v3 that Kubernetes' CronJob controller uses,
// when a CronJob schedule fires: it reads JSON lines {"spec", "tz", "from", "count"} on stdin and
// writes one JSON line per request, {"spec", "tz", "from", "next": [RFC 3339 UTC instants]} or,
// when robfig refuses the spec, {"spec", "tz", "from", "error"}.
//
// The spec is parsed by cron.ParseStandard, as the controller does, with the zone given as the
// controller gives spec.timeZone (a TZ= prefix), and each instant is Next of the one before it.
// generate.py drives it; see README.md.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"time"

	"github.com/robfig/cron"
)

type request struct {
	Spec  string `json:"spec"`
	Zone  string `json:"tz"`
	From  string `json:"from"`
	Count int    `json:"count"`
}

type answer struct {
	Spec  string   `json:"spec"`
	Zone  string   `json:"tz"`
	From  string   `json:"from"`
	Next  []string `json:"next,omitempty"`
	Error string   `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			panic(err)
		}
		if err := out.Encode(next(req)); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}

func next(req request) answer {
	found := answer{Spec: req.Spec, Zone: req.Zone, From: req.From}
	schedule, err := cron.ParseStandard("TZ=" + req.Zone + " " + req.Spec)
	if err != nil {
		found.Error = err.Error()
		return found
	}
	t, err := time.Parse(time.RFC3339, req.From)
	if err != nil {
		panic(err)
	}
	for i := 0; i < req.Count; i++ {
		t = schedule.Next(t)
		if t.IsZero() {
			break
		}
		found.Next = append(found.Next, t.UTC().Format(time.RFC3339))
	}
	return found
}
