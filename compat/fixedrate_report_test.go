package compat

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestParseRates: MB/s and percentages of the maximum, and what is refused.
func TestParseRates(t *testing.T) {
	got, err := parseRates("50, 200,70%")
	if err != nil {
		t.Fatal(err)
	}
	want := []fixedRate{{mbps: 50}, {mbps: 200}, {pct: 70}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rate %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "x", "0", "-5", "150%", "50,,"} {
		if _, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) accepted", bad)
		}
	}
}

// TestLatencyReport: the table has every target's percentiles and kbroker's
// ratio to each peer, and the plot is well-formed SVG.
func TestLatencyReport(t *testing.T) {
	rate := fixedRate{mbps: 50}
	run := func(name string, ms int64) latRun {
		r := latRun{target: name, rate: rate, offered: 50, acked: 50, consumed: 50, publish: newLatHist(), e2e: newLatHist(), load: "0.1 0.1 0.1"}
		r.perSec = append(r.perSec, newLatHist(), newLatHist())
		for i := range int64(1000) {
			d := time.Duration(ms*1000+i) * time.Microsecond
			recordLat(r.publish, d)
			recordLat(r.e2e, 2*d)
			recordLat(r.perSec[i%2], 2*d)
		}
		return r
	}
	targets := []benchTarget{{name: "kbroker"}, {name: "kafka"}}
	runs := []latRun{run("kbroker", 1), run("kafka", 4)}
	got := latencyReport(targets, runs, rate)
	for _, want := range []string{"fixed rate 50 MB/s", "kbroker       50.0", "kbroker / kafka", "e2e p99.9 0.4", "acked MB/s 1.00x"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// The clusters' bench: the reference is the first kbroker… target,
	// and the columns widen for longer names.
	targets = []benchTarget{{name: "kbroker x3"}, {name: "kafka x3"}, {name: "kafka39 x3"}}
	runs = []latRun{run("kbroker x3", 1), run("kafka x3", 4), run("kafka39 x3", 2)}
	got = latencyReport(targets, runs, rate)
	for _, want := range []string{"kafka39 x3     50.0", "kbroker x3 / kafka x3 ", "kbroker x3 / kafka39 x3 ", "acked MB/s 1.00x"} {
		if !strings.Contains(got, want) {
			t.Errorf("cluster report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "kafka x3 / ") || strings.Contains(got, "kbroker x3 / kbroker x3") {
		t.Errorf("cluster report has a ratio of the wrong reference:\n%s", got)
	}
	// A rate given twice (KBROKER_BENCH_RATES=200,200) is two rounds, each
	// reported with its own runs.
	second := run("kbroker", 7)
	second.round = 1
	runs = []latRun{run("kbroker", 1), second}
	if at := runsAt(runs, 1); len(at) != 1 || at[0].round != 1 {
		t.Fatalf("runsAt(runs, 1) = %d runs, want round 1's only", len(at))
	}
	targets = []benchTarget{{name: "kbroker"}}
	for round, want := range []string{"      1.50 ", "      7.50 "} {
		if got := latencyReport(targets, runsAt(runs, round), rate); !strings.Contains(got, want) {
			t.Errorf("round %d: report lacks pub p50 %q:\n%s", round, want, got)
		}
	}
	var series []plotSeries
	for _, r := range runs {
		series = append(series, plotSeries{label: r.target + " <p99>", color: "#000", ys: []float64{latMs(r.perSec[0], 99), 0, latMs(r.perSec[1], 99)}})
	}
	d := xml.NewDecoder(strings.NewReader(latencySVG("a & b", series)))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG: %v", err)
		}
	}
}

// TestLoadgenJSON: the load generator's spec and result survive their trip
// through JSON, the histograms with every count and percentile, and the
// rebuilt latRun has the rates and missing records the child measured.
func TestLoadgenJSON(t *testing.T) {
	spec := loadgenSpec{
		Target: "kbroker x3", Seeds: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, Topic: "rate-0-kbroker-x3",
		Partitions: 3, OfferedMBps: 12.5, Start: 100 * time.Millisecond, Warmup: 2 * time.Second, Measure: 3 * time.Second,
		PayloadSize: benchValueSize, GOGC: 400, HeapMiB: 512, TraceDir: "/tmp/x",
	}
	var gotSpec loadgenSpec
	jsonRoundTrip(t, spec, &gotSpec)
	if !reflect.DeepEqual(gotSpec, spec) {
		t.Errorf("spec: got %+v, want %+v", gotSpec, spec)
	}
	from := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	var gotStart loadgenStart
	jsonRoundTrip(t, loadgenStart{From: from}, &gotStart)
	if !gotStart.From.Equal(from) {
		t.Errorf("start: got %v, want %v", gotStart.From, from)
	}

	publish, e2e := newLatHist(), newLatHist()
	perSec := []*hdrhistogram.Histogram{newLatHist(), newLatHist(), newLatHist()} // the last stays empty
	for i := range int64(10_000) {
		d := time.Duration(i*i%90_000+1) * time.Microsecond
		recordLat(publish, d)
		recordLat(e2e, 3*d)
		recordLat(perSec[i%2], 3*d)
	}
	recordLat(e2e, time.Hour) // clamped to latMaxMicros
	sent := loadgenResult{Sent: 11_000, Acked: 10_999, Seen: 10_998, Measured: 10_001,
		AckedBytes: 6_000_000, ConsumedBytes: 4_500_000, Missing: 1,
		Publish: exportLatHist(publish), E2E: exportLatHist(e2e)}
	for _, h := range perSec {
		sent.PerSec = append(sent.PerSec, exportLatHist(h))
	}
	if n, all := len(sent.Publish.Counts), len(publish.Export().Counts); n >= all || n == 0 {
		t.Errorf("exported publish histogram has %d of %d counts, want its trailing zeros left out", n, all)
	}
	var got loadgenResult
	jsonRoundTrip(t, sent, &got)
	r, err := got.latRun("kbroker x3", 12.5, spec.Measure)
	if err != nil {
		t.Fatal(err)
	}
	if r.target != "kbroker x3" || r.offered != 12.5 || r.acked != 2 || r.consumed != 1.5 || r.missing != 1 {
		t.Errorf("latRun: got %+v", r)
	}
	for _, c := range []struct {
		name      string
		got, want *hdrhistogram.Histogram
	}{{"publish", r.publish, publish}, {"e2e", r.e2e, e2e}, {"second 0", r.perSec[0], perSec[0]}, {"second 1", r.perSec[1], perSec[1]}, {"second 2", r.perSec[2], perSec[2]}} {
		if c.got.TotalCount() != c.want.TotalCount() || c.got.Min() != c.want.Min() {
			t.Errorf("%s: %d values from %d, want %d from %d", c.name, c.got.TotalCount(), c.got.Min(), c.want.TotalCount(), c.want.Min())
		}
		for _, q := range latQuantiles {
			if g, w := latMs(c.got, q.q), latMs(c.want, q.q); g != w {
				t.Errorf("%s %s: got %v ms, want %v ms", c.name, q.name, g, w)
			}
		}
	}
	if r.e2e.Max() < latMaxMicros || r.perSec[2].TotalCount() != 0 {
		t.Errorf("e2e max %d µs (want the clamped hour), second 2 has %d values (want none)", r.e2e.Max(), r.perSec[2].TotalCount())
	}

	// What does not fit the window or is not a histogram is refused.
	if _, err := got.latRun("kbroker x3", 12.5, 5*time.Second); err == nil {
		t.Error("3 seconds' histograms accepted for a 5-second window")
	}
	got.E2E.Counts[0] = -1
	if _, err := got.latRun("kbroker x3", 12.5, spec.Measure); err == nil {
		t.Error("a negative count accepted")
	}
}

// jsonRoundTrip marshals v to JSON and unmarshals it into out.
func jsonRoundTrip(t *testing.T, v, out any) {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, out); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
}
