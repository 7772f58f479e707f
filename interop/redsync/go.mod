module github.com/batonhq/baton/interop/redsync

go 1.26.8

replace github.com/batonhq/baton => ../..

require (
	github.com/batonhq/baton v0.0.0-00010101000000-000000000000
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/otel v1.45.0 // indirect
	go.opentelemetry.io/otel/metric v1.45.0 // indirect
	go.opentelemetry.io/otel/trace v1.45.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
