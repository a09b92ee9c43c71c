//go:build prometheus

package prometheus_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// installHint is what to run when Prometheus is missing: never a skip.
const installHint = "install Debian's prometheus package (it ships promtool): make prometheus, or apt-get install -y prometheus"

// deployDir is the repository's deploy/ folder, from this package's.
var deployDir = filepath.Join("..", "..", "deploy")

// rulesFile and dashboardFile are what the tests check, as shipped.
var (
	rulesFile     = filepath.Join(deployDir, "prometheus", "worksteal-rules.yml")
	rulesTestFile = filepath.Join(deployDir, "prometheus", "worksteal-rules.test.yml")
	dashboardFile = filepath.Join(deployDir, "grafana", "worksteal.json")
)

// tool returns the path of prometheus or promtool, or fails the test
// saying how to install them.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH: %s", name, installHint)
	}
	return path
}

// freeAddr is a loopback address with a port free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// logBuffer keeps a process's output for the test's failure log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// promServer is a prometheus process of the test's own.
type promServer struct {
	url string // http://127.0.0.1:port
}

// startPrometheus runs prometheus on a free port, with a temporary
// storage folder and a configuration that scrapes targets (host:port,
// /metrics) and evaluates rules (files) every second, exemplar storage on;
// it returns once prometheus is ready, and stops it at the test's end.
func startPrometheus(t *testing.T, targets []string, rules ...string) *promServer {
	t.Helper()
	bin := tool(t, "prometheus")
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n")
	if len(rules) > 0 {
		cfg.WriteString("rule_files:\n")
		for _, r := range rules {
			abs, err := filepath.Abs(r)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&cfg, "  - %s\n", strconv.Quote(abs))
		}
	}
	fmt.Fprintf(&cfg, "scrape_configs:\n  - job_name: worksteal\n    static_configs:\n      - targets: [%s]\n", strings.Join(quoted, ", "))
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logs := &logBuffer{}
	cmd := exec.Command(bin,
		"--config.file="+cfgFile,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--enable-feature=exemplar-storage",
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("prometheus configuration:\n%s\nprometheus output:\n%s", cfg.String(), logs.String())
		}
	})
	p := &promServer{url: "http://" + addr}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited before it was ready: %v\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within a minute:\n%s", logs.String())
		}
	}
}

// api calls a Prometheus HTTP API endpoint and decodes its data into v.
func (p *promServer) api(ctx context.Context, path string, params url.Values, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return fmt.Errorf("%s: %v: %s", path, err, body)
	}
	if envelope.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, params.Encode(), envelope.Error)
	}
	return json.Unmarshal(envelope.Data, v)
}

// series is one series of a range query: its labels and its values.
type series struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// queryRange runs expr over the last window at 1s steps and returns the
// series with at least one value that is a number (not NaN).
func (p *promServer) queryRange(ctx context.Context, expr string, window time.Duration) ([]series, error) {
	end := time.Now()
	var data struct {
		Result []series `json:"result"`
	}
	err := p.api(ctx, "/api/v1/query_range", url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(end.Add(-window).Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {"1"},
	}, &data)
	if err != nil {
		return nil, err
	}
	var withData []series
	for _, s := range data.Result {
		for _, v := range s.Values {
			if str, _ := v[1].(string); str != "" {
				if f, err := strconv.ParseFloat(str, 64); err == nil && !math.IsNaN(f) {
					withData = append(withData, s)
					break
				}
			}
		}
	}
	return withData, nil
}

// alert is one alert of /api/v1/alerts.
type alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"` // pending or firing
	ActiveAt time.Time         `json:"activeAt"`
	Value    string            `json:"value"`
}

// alerts returns the alerts pending or firing now.
func (p *promServer) alerts(ctx context.Context) ([]alert, error) {
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	return data.Alerts, p.api(ctx, "/api/v1/alerts", nil, &data)
}

// eventually polls cond every 250ms until it returns nil, and fails the
// test with its last error once within has passed. The machine may be
// loaded: deadlines are generous and nothing is asserted about speed.
func eventually(t *testing.T, within time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: still not so after %v: %v", what, within, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// The example binary, built once for the tests that run it.
var (
	buildOnce sync.Once
	buildDir  string
	binary    string
	buildErr  error
)

// exampleBinary builds the example module (its own go.mod, the workspace
// off) as a user's go build would.
func exampleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "worksteal-prometheus-"); buildErr != nil {
			return
		}
		binary = filepath.Join(buildDir, "example")
		cmd := exec.Command("go", "build", "-o", binary, ".")
		cmd.Dir = filepath.Join("..", "..", "example")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build the example: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

var listeningLine = regexp.MustCompile(`^listening http=\S+ echo=\S+ grpc=\S+ admin=(\S+)$`)

// startExample runs the example, with its traffic, on free ports and the
// Redis at redisURL, and returns its admin address (the metrics'). It is
// stopped at the test's end.
func startExample(t *testing.T, redisURL string) string {
	t.Helper()
	cmd := exec.Command(exampleBinary(t), "-http=127.0.0.1:0", "-echo=127.0.0.1:0", "-grpc=127.0.0.1:0", "-admin=127.0.0.1:0", "-summary=1m")
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "OTEL_") && !strings.HasPrefix(name, "REDIS_") &&
			name != "HTTP_ADDR" && name != "ECHO_ADDR" && name != "GRPC_ADDR" && name != "ADMIN_ADDR" && name != "TRAFFIC" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "REDIS_URL="+redisURL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	admin := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(logs, sc.Text())
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				admin <- m[1]
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("example output:\n%s", logs.String())
		}
	})
	select {
	case a := <-admin:
		return a
	case <-exited:
		t.Fatalf("the example exited before listening:\n%s", logs.String())
	case <-time.After(time.Minute):
		t.Fatalf("the example did not listen within a minute:\n%s", logs.String())
	}
	return ""
}
