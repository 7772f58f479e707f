package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/batonhq/baton"
)

// healthTolerance is how far past a lease's deadline /healthz still
// answers ok: the session's own watchdog normally ends the lease at the
// deadline, so a lease still held a second later means a wedged process.
const healthTolerance = time.Second

// metricsServer serves /metrics (baton's metrics through OpenTelemetry's
// Prometheus exporter, with the Go runtime's and the process's) and
// /healthz (baton.Health over the leases the command holds) for the life
// of one command.
type metricsServer struct {
	addr   string
	srv    *http.Server
	mp     *sdkmetric.MeterProvider
	health *baton.Health
	done   chan struct{}
}

// metricsCommand reports whether the subcommand name (as given to
// newFlags) takes --metrics-addr: the ones that hold or wait (lock, elect,
// semaphore, queue); serve adds its own.
func metricsCommand(name string) bool {
	switch name {
	case "lock", "elect", "semaphore":
		return true
	}
	return strings.HasPrefix(name, "queue ")
}

// addMetricsFlag adds --metrics-addr to a subcommand's flags.
func addMetricsFlag(fs *flagSet, addr *string) {
	fs.StringVar(addr, "metrics-addr", "", "serve Prometheus metrics on http://`host:port`/metrics (and /healthz) while the command runs")
}

// startMetrics listens on addr (nil without one) and serves baton's
// metrics with the Go runtime's and the process's, or with those of extra
// gatherers instead (baton serve: prometheus.DefaultGatherer, where etcd
// registers its own, runtime and process collectors included).
func startMetrics(addr string, extra ...prometheus.Gatherer) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	if len(extra) == 0 {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageErr("--metrics-addr: %v", err)
	}
	ms := &metricsServer{
		addr:   ln.Addr().String(),
		mp:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		health: baton.NewHealth(healthTolerance),
		done:   make(chan struct{}),
	}
	gather := prometheus.Gatherers{reg}
	if len(extra) > 0 {
		gather = append(gather, extra...)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", ms.health)
	ms.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(ms.done)
		_ = ms.srv.Serve(ln) // ErrServerClosed after close; a failed listener only ends the metrics
	}()
	return ms, nil
}

// announce names the address served when the flag left the port to the
// system (port 0).
func (ms *metricsServer) announce(w io.Writer, flag string) {
	if strings.HasSuffix(flag, ":0") {
		fmt.Fprintf(w, "baton: metrics on http://%s/metrics\n", ms.addr)
	}
}

// telemetry is what sessions and Redis locks report to.
func (ms *metricsServer) telemetry() baton.Telemetry {
	if ms == nil {
		return baton.Telemetry{}
	}
	return baton.Telemetry{MeterProvider: ms.mp, Health: ms.health}
}

// close stops serving.
func (ms *metricsServer) close() {
	if ms == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = ms.srv.Shutdown(ctx)
	<-ms.done
	_ = ms.mp.Shutdown(ctx)
}
