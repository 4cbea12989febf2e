// Package deploy holds the files that run decant as a service: a
// Dockerfile, a systemd unit, Kubernetes manifests, Prometheus alert rules
// and a Grafana dashboard (docs/operations.md, "Deploying"). It has no
// code; its tests check those files with the tools that understand them
// (promtool, systemd-analyze, the Go toolchain) and hold the invariants
// between them: the metric names decant exports, its HTTP endpoints, its
// DECANT_* settings and exit codes.
package deploy
