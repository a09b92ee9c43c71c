package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/telemetry"
)

// actions is what [WithActions] sets.
type actions struct {
	in     *inspect.Inspector
	key    []byte
	who    func(*http.Request) string
	cancel func(ctx context.Context, queue, id string) error
}

// WithActions lets operators act from the page: pause and resume a job,
// retry or purge dead letters, run a delayed item now, cancel a pending
// or delayed task ([inspect.Inspector.Cancel]). Without it the
// dashboard is read-only: it shows no button and refuses every POST.
//
// in is the fleet's [inspect.Inspector], which does the work. key, of 32
// bytes or more, signs the page's action tokens: give every replica
// behind one load balancer the same key, and a page served by one is
// accepted by the others. who names the operator of a request, as the
// host's auth knows them; it is logged and traced with each action, and
// binds the token, so that a token seen on one operator's page is of no
// use to another. A request it names no one for ("") may not act.
//
// Mount the dashboard behind the host's auth: it does not authenticate
// anyone. See the package documentation.
func WithActions(in *inspect.Inspector, key []byte, who func(*http.Request) string) Option {
	return optionFunc(func(c *config) {
		c.actions = &actions{in: in, key: append([]byte(nil), key...), who: who}
		if in != nil {
			c.actions.cancel = func(ctx context.Context, queue, id string) error {
				_, err := in.Cancel(ctx, queue, id)
				return err
			}
		}
	})
}

// WithLogger sets the logger of the actions; slog.Default() by default.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithTracerProvider sets the provider of the actions' spans; the otel
// global by default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

func (a *actions) validate() error {
	switch {
	case a == nil:
		return nil
	case a.in == nil:
		return fmt.Errorf("%w: WithActions: the Inspector is nil", ErrInvalidOption)
	case len(a.key) < keyMin:
		return fmt.Errorf("%w: WithActions: a key of %d bytes, want %d or more", ErrInvalidOption, len(a.key), keyMin)
	case a.who == nil:
		return fmt.Errorf("%w: WithActions: the who function is nil", ErrInvalidOption)
	}
	return nil
}

// Bounds of an action's request.
const (
	actionBodyMax = 64 << 10 // a form of idsMax ids and a few fields
	idsMax        = 100      // ids of one action: a page of items, twice over
	durationMax   = 32       // bytes of a pause's duration
	actionTimeout = 30 * time.Second
)

// action is a parsed, validated action request.
type action struct {
	name     string // pause, resume, retry, purge, run, cancel, retry-all, purge-all
	job      string
	queue    string
	ids      []string
	duration time.Duration
}

var (
	errUnknownAction = errors.New("dashboard: unknown action")
	errNoActor       = errors.New("dashboard: actions need an operator: the who function named no one (is the dashboard behind the host's auth?)")
)

// parseAction reads an action from a POST's form body; the URL's query
// is ignored, so that a link cannot carry one.
func (a *actions) parseAction(form url.Values) (action, error) {
	act := action{name: form.Get("action")}
	switch act.name {
	case "pause", "resume":
		act.job = form.Get("job")
		if err := names.Check(act.job); err != nil {
			return act, fmt.Errorf("%w: job: %v", inspect.ErrInvalidArgument, err)
		}
		if act.name == "pause" {
			s := form.Get("for")
			d, err := time.ParseDuration(s)
			if len(s) > durationMax || err != nil {
				return act, fmt.Errorf("%w: pause for %.40q: not a duration such as 10m or 2h", inspect.ErrInvalidArgument, s)
			}
			act.duration = d // inspect checks its range
		}
		return act, nil
	case "retry", "purge", "run", "cancel", "retry-all", "purge-all":
	default:
		return act, fmt.Errorf("%w %.40q", errUnknownAction, act.name)
	}
	if act.name == "cancel" && a.cancel == nil {
		return act, fmt.Errorf("%w: cancel is not enabled", errUnknownAction)
	}
	act.queue = form.Get("queue")
	if err := names.Check(act.queue); err != nil {
		return act, fmt.Errorf("%w: queue: %v", inspect.ErrInvalidArgument, err)
	}
	switch act.name {
	case "retry-all", "purge-all":
		// No JavaScript confirm: the page's form has a required checkbox.
		if form.Get("confirm") != "yes" {
			return act, fmt.Errorf("%w: %s needs confirm=yes", inspect.ErrInvalidArgument, act.name)
		}
		return act, nil
	}
	act.ids = form["id"]
	if len(act.ids) == 0 || len(act.ids) > idsMax {
		return act, fmt.Errorf("%w: %d ids, want 1 to %d", inspect.ErrInvalidArgument, len(act.ids), idsMax)
	}
	for _, id := range act.ids {
		if !validID(id) {
			return act, fmt.Errorf("%w: id %.40q is not an item id", inspect.ErrInvalidArgument, id)
		}
	}
	return act, nil
}

// validID accepts the ids a queue makes: 26 characters of lower-case
// base32, and a fan-out's child's, the same and ".n" (n up to 9999).
func validID(id string) bool {
	if len(id) < 26 || len(id) > 31 {
		return false
	}
	for i := range 26 {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	rest := id[26:]
	if rest == "" {
		return true
	}
	if rest[0] != '.' || len(rest) < 2 {
		return false
	}
	for _, c := range []byte(rest[1:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// do runs the action; n counts the items moved or deleted.
func (a *actions) do(ctx context.Context, act action) (n int, err error) {
	switch act.name {
	case "pause":
		return 0, a.in.Pause(ctx, act.job, act.duration)
	case "resume":
		return 0, a.in.Resume(ctx, act.job)
	case "retry":
		return a.in.RetryDead(ctx, act.queue, act.ids...)
	case "purge":
		return a.in.PurgeDead(ctx, act.queue, act.ids...)
	case "retry-all":
		return a.in.RetryAllDead(ctx, act.queue, 0)
	case "purge-all":
		return a.in.PurgeAllDead(ctx, act.queue, 0)
	case "run":
		return a.in.RunDelayed(ctx, act.queue, act.ids...)
	case "cancel":
		// The queue must be one the fleet has, as for the other actions.
		if _, err := a.in.Items(ctx, act.queue, inspect.StatePending, 0, 1); err != nil {
			return 0, err
		}
		for _, id := range act.ids {
			if err := a.cancel(ctx, act.queue, id); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	return 0, errUnknownAction
}

// serveAction serves a POST: the CSRF checks, then the action, logged
// and traced with who did it. Anything refused changes nothing.
func (d *Dashboard) serveAction(w http.ResponseWriter, r *http.Request) {
	a := d.cfg.actions
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	actor := a.who(r)
	ctx, span := d.tracer.Start(r.Context(), telemetry.SpanAction, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(telemetry.AttrActor.String(actor)))
	defer span.End()

	fail := func(status int, act action, err error) {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		level := slog.LevelWarn
		if status >= 500 {
			level = slog.LevelError
		}
		d.logger.Log(ctx, level, "dashboard: action refused or failed", "actor", actor, "action", act.name,
			"job", act.job, "queue", act.queue, "ids", len(act.ids), "status", status, "error", err)
		http.Error(w, err.Error(), status)
	}

	// Both checks: the origin check stops a browser's cross-origin POST
	// whatever it carries; the token stops what that check lets through
	// (no Sec-Fetch-Site nor Origin) unless it read a page of this actor.
	if err := crossOrigin.Check(r); err != nil {
		fail(http.StatusForbidden, action{}, fmt.Errorf("dashboard: %w", err))
		return
	}
	// No one to record: the host's auth did not run, or let in a request
	// it cannot name.
	if actor == "" {
		fail(http.StatusForbidden, action{}, errNoActor)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, actionBodyMax)
	if err := r.ParseForm(); err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		fail(status, action{}, fmt.Errorf("dashboard: reading the form: %w", err))
		return
	}
	if err := checkToken(a.key, actor, r.PostForm.Get("token"), d.now()); err != nil {
		fail(http.StatusForbidden, action{}, err)
		return
	}
	act, err := a.parseAction(r.PostForm)
	span.SetAttributes(telemetry.AttrAction.String(act.name))
	if err != nil {
		fail(http.StatusBadRequest, act, err)
		return
	}
	if act.job != "" {
		span.SetAttributes(telemetry.AttrJob.String(act.job))
	}
	if act.queue != "" {
		span.SetAttributes(telemetry.AttrQueue.String(act.queue))
	}
	span.SetAttributes(telemetry.AttrActionIDs.Int(len(act.ids)))
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	n, err := a.do(ctx, act)
	span.SetAttributes(telemetry.AttrActionCount.Int(n))
	if err != nil {
		fail(actionStatus(err), act, err)
		return
	}
	d.logger.InfoContext(ctx, "dashboard: action", "actor", actor, "action", act.name, "job", act.job,
		"queue", act.queue, "ids", len(act.ids), "count", n, "duration", act.duration)
	span.SetAttributes(attribute.Int("http.response.status_code", http.StatusSeeOther))

	if wantsJSON(r) {
		h.Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(struct {
			Action string `json:"action"`
			Job    string `json:"job,omitempty"`
			Queue  string `json:"queue,omitempty"`
			Count  int    `json:"count"`
		}{act.name, act.job, act.queue, n})
		return
	}
	// Back to the page, relative to wherever it is mounted, saying what
	// was done from a fixed vocabulary (never text of the request).
	back := url.Values{"done": {act.name}, "n": {strconv.Itoa(n)}}
	if act.queue != "" {
		back.Set("queue", act.queue)
	}
	if act.job != "" {
		back.Set("job", act.job)
	}
	h.Set("Location", "?"+back.Encode()+"#actions")
	w.WriteHeader(http.StatusSeeOther)
}

// actionStatus maps an action's error to its response's status.
func actionStatus(err error) int {
	switch {
	case errors.Is(err, inspect.ErrInvalidArgument):
		return http.StatusBadRequest
	case errors.Is(err, inspect.ErrUnknownQueue), errors.Is(err, inspect.ErrUnknownJob), errors.Is(err, inspect.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// tracerOf is the actions' tracer, of the otel global provider by
// default.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(telemetry.ScopeName, trace.WithInstrumentationVersion(telemetry.Version))
}
