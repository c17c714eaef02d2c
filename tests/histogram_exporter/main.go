// A target for Cairn's tests that exposes native histograms, made with
// Prometheus' own Go client library so that the protobuf exposition is the
// real thing. Observations are deterministic: each scrape first observes
// the next batch of a fixed sequence, so two runs expose the same data.
package main

import (
	"flag"
	"log"
	"math"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve /metrics on")
	flag.Parse()

	reg := prometheus.NewRegistry()
	// Fine buckets (schema 3) over latencies, with a zero bucket.
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                            "test_request_duration_seconds",
		Help:                            "Request latency, native buckets only.",
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramZeroThreshold:    1e-3,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: 0,
	}, []string{"path"})
	// Coarse buckets (schema 0) over signed values: negative buckets too.
	delta := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                        "test_temperature_delta_celsius",
		Help:                        "Signed observations.",
		NativeHistogramBucketFactor: 2,
	})
	// Both classic and native buckets, as many instrumented services expose.
	size := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                        "test_response_size_bytes",
		Help:                        "Response sizes, classic and native buckets.",
		Buckets:                     prometheus.ExponentialBuckets(100, 4, 6),
		NativeHistogramBucketFactor: 1.5,
	})
	reg.MustRegister(latency, delta, size)

	var mu sync.Mutex
	step := 0
	observe := func() {
		mu.Lock()
		defer mu.Unlock()
		for i := 0; i < 50; i++ {
			n := float64(step*50 + i)
			latency.WithLabelValues("/a").Observe(0.002 + math.Mod(n*0.0137, 1.7))
			latency.WithLabelValues("/b").Observe(math.Mod(n*0.071, 0.4))
			delta.Observe(math.Sin(n) * 20)
			size.Observe(50 + math.Mod(n*97.3, 30000))
		}
		// An exact zero and a tiny value land in the zero bucket.
		latency.WithLabelValues("/a").Observe(0)
		latency.WithLabelValues("/b").Observe(1e-4)
		step++
	}

	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		observe()
		metrics.ServeHTTP(w, r)
	})
	ln, err := listenOn(*listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}
