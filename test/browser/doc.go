// Package browser drives the dashboard package in a real headless Chromium
// (chromedp), through the dashboard's public API only: the page refreshes
// itself from a live recruiter, keeps its Content-Security-Policy, marks
// a server that stopped answering as stale, and explains its numbers
// where they stand (the eviction banner, the skipped draws split under
// one header, automatic pace and its fleet, a cron schedule's next tick
// and lateness), and at 1280 × 800 opens on each job's state with every
// jobs-table column inside the viewport. It holds tests only,
// behind the build tag browser.
//
// # Running
//
//	make test-browser
//
// installs chromium when missing (Debian/Ubuntu) and runs
// go test -tags browser in this folder; the tests need /usr/bin/chromium
// and a redis-server, as the rest of the suite does.
// WORKSTEAL_DASHBOARD_PNG=/tmp/dashboard.png keeps a screenshot at 1280 px
// (docs/dashboard.png): go test -tags browser -run Fits1280 ./browser/.
package browser
