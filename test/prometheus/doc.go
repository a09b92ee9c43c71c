// Package prometheus checks worksteal's Grafana dashboard and Prometheus
// alert rules (deploy/grafana, deploy/prometheus) against a real
// Prometheus: promtool checks the rules and runs their unit tests; a fleet
// of two example processes, with their traffic, is scraped, and every
// panel's query returns data; every metric and label that a panel or a
// rule names is one that the processes expose; a job whose lock a stuck
// holder keeps makes the "not run" alert fire, and it clears once the job
// runs again. It holds tests only, behind the build tag prometheus.
//
// # Running
//
//	make test-prometheus
//
// installs Debian's prometheus package when prometheus or promtool is
// missing, and runs go test -tags prometheus in this folder; the tests
// need a redis-server too, as the rest of the suite does. Each starts its
// own prometheus process on a free port, with a generated configuration
// and a temporary storage folder, never the system's service.
package prometheus
