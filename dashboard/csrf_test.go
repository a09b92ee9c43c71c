package dashboard_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/dashboard"
)

// The attacks: each request is refused with the status given and
// changes nothing in Redis. The operator's cookie rides along, as a
// browser sends it; the cross-origin cases even carry a valid token, as
// if it had leaked, so that they test the origin check alone.
func TestActionAttacks(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	_, token := b.page(t, "ana", "")
	_, bobToken := b.page(t, "bob", "")
	purgeAll := func(tok string) url.Values {
		return url.Values{"action": {"purge-all"}, "queue": {"mail"}, "confirm": {"yes"}, "token": {tok}}
	}
	retry := func(ids ...string) url.Values {
		return url.Values{"action": {"retry"}, "queue": {"mail"}, "id": ids, "token": {token}}
	}
	tampered := []byte(token)
	tampered[len(tampered)-2] ^= 1
	long := strings.Repeat("a", 26)
	many := make([]string, 101)
	for i := range many {
		many[i] = b.dead[0]
	}
	otherKey, err := dashboard.NewManual(&fakeSource{}, dashboard.WithActions(b.in, []byte(strings.Repeat("k", 32)), sessionUser),
		dashboard.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	otherReq := httptest.NewRequest(http.MethodGet, "/ops", nil)
	otherReq.AddCookie(&http.Cookie{Name: "session", Value: "ana"})
	otherRec := httptest.NewRecorder()
	otherKey.ServeHTTP(otherRec, otherReq)
	foreign := tokenRE.FindStringSubmatch(otherRec.Body.String())[1]

	for _, tc := range []struct {
		name   string
		form   url.Values
		header []string
		status int
	}{
		{"cross-site form POST", purgeAll(token), []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, 403},
		{"same-site sibling origin", purgeAll(token), []string{"Sec-Fetch-Site", "same-site", "Origin", "http://blog.ops.example"}, 403},
		{"cross-origin without Sec-Fetch-Site", purgeAll(token), []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}, 403},
		{"missing token", purgeAll(""), nil, 403},
		{"missing token, from a script", purgeAll(""), []string{"Sec-Fetch-Site", "", "Origin", ""}, 403},
		{"tampered token", purgeAll(string(tampered)), nil, 403},
		{"token of another operator", purgeAll(bobToken), nil, 403},
		{"token under another key", purgeAll(foreign), nil, 403},
		{"forged expiry", purgeAll("99999999999" + token[strings.IndexByte(token, '.'):]), nil, 403},
		{"oversized token", purgeAll(strings.Repeat("1", 5000)), nil, 403},
		{"not a form", purgeAll(token), []string{"Content-Type", "application/json"}, 403},
		{"oversized id", retry(strings.Repeat("a", 10_000)), nil, 400},
		{"malformed id", retry(long[:25] + "*"), nil, 400},
		{"id with a key pattern", retry(long + ".*"), nil, 400},
		{"101 ids", retry(many...), nil, 400},
		{"no id", retry(), nil, 400},
		{"malformed queue", url.Values{"action": {"retry"}, "queue": {"mail}:x"}, "id": {b.dead[0]}, "token": {token}}, nil, 400},
		{"unknown action", url.Values{"action": {"flushall"}, "queue": {"mail"}, "token": {token}}, nil, 400},
		{"pause out of range", url.Values{"action": {"pause"}, "job": {"nightly"}, "for": {"9999h"}, "token": {token}}, nil, 400},
		{"pause malformed", url.Values{"action": {"pause"}, "job": {"nightly"}, "for": {"soon"}, "token": {token}}, nil, 400},
		{"unknown queue", url.Values{"action": {"purge-all"}, "queue": {"billing"}, "confirm": {"yes"}, "token": {token}}, nil, 404},
		{"unknown job", url.Values{"action": {"pause"}, "job": {"hourly"}, "for": {"1m"}, "token": {token}}, nil, 404},
		{"oversized body", url.Values{"action": {"retry"}, "queue": {"mail"}, "id": {strings.Repeat("a", 70<<10)}, "token": {token}}, nil, 413},
	} {
		before := b.fleet(t)
		rec := b.post(t, "ana", tc.form, tc.header...)
		if rec.Code != tc.status {
			t.Errorf("%s: %d %s; want %d", tc.name, rec.Code, strings.TrimSpace(rec.Body.String()), tc.status)
		}
		if after := b.fleet(t); after != before {
			t.Errorf("%s: the fleet changed from %+v to %+v", tc.name, before, after)
		}
	}
	if logs := b.logs.String(); !strings.Contains(logs, `"level":"WARN","msg":"dashboard: action refused or failed","actor":"ana"`) {
		t.Errorf("refusals are not logged with the actor:\n%.2000s", logs)
	}
}

// The action's fields in the URL do nothing: a GET shows the page, and a
// POST reads its body only.
func TestActionNotFromURL(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	_, token := b.page(t, "ana", "")
	before := b.fleet(t)
	query := "?" + url.Values{"action": {"purge-all"}, "queue": {"mail"}, "confirm": {"yes"}, "token": {token}}.Encode()
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req := httptest.NewRequest(method, "/ops"+query, nil)
		req.AddCookie(&http.Cookie{Name: "session", Value: "ana"})
		rec := httptest.NewRecorder()
		b.d.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("%s with the action's parameters = %d; want 200, the page", method, rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/ops"+query, strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "session", Value: "ana"})
	rec := httptest.NewRecorder()
	b.d.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("POST with the action in its URL = %d; want 400", rec.Code)
	}
	if after := b.fleet(t); after != before {
		t.Errorf("the fleet changed from %+v to %+v", before, after)
	}
}

// A token holds across replicas that share the key, and expires.
func TestActionTokenReplicasAndExpiry(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	replica, err := dashboard.NewManual(&fakeSource{}, dashboard.WithActions(b.in, actionKey, sessionUser),
		dashboard.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	_, token := b.page(t, "ana", "") // served by b.d
	post := func(d *dashboard.Dashboard) int {
		req := httptest.NewRequest(http.MethodPost, "/ops", strings.NewReader(url.Values{
			"action": {"retry"}, "queue": {"mail"}, "id": {b.dead[0]}, "token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.AddCookie(&http.Cookie{Name: "session", Value: "ana"})
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, req)
		return rec.Code
	}
	replica.SetClock(func() time.Time { return time.Now().Add(2*time.Hour + time.Second) })
	if code := post(replica); code != http.StatusForbidden {
		t.Errorf("an expired token = %d; want 403", code)
	}
	if d := b.depth(t); d.Dead != 2 {
		t.Fatalf("dead = %d after a refused retry; want 2", d.Dead)
	}
	replica.SetClock(time.Now)
	if code := post(replica); code != http.StatusSeeOther {
		t.Errorf("the page's token on another replica = %d; want 303", code)
	}
	if d := b.depth(t); d.Dead != 1 {
		t.Errorf("dead = %d after the retry on the replica; want 1", d.Dead)
	}
}

// A request the host's who names no one for may not act, even with a
// token minted for no one, and its page offers no form.
func TestActionNeedsAnOperator(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	page, token := b.page(t, "", "?queue=mail")
	if token != "" || strings.Contains(page, "<form") || !strings.Contains(page, "actions need an operator") {
		t.Errorf("the page of no operator has a token or forms, or does not say why not")
	}
	_, anyToken := b.page(t, "ana", "")
	before := b.fleet(t)
	for _, tok := range []string{"", anyToken} {
		rec := b.post(t, "", url.Values{"action": {"purge-all"}, "queue": {"mail"}, "confirm": {"yes"}, "token": {tok}})
		if rec.Code != http.StatusForbidden {
			t.Errorf("POST by no one = %d; want 403", rec.Code)
		}
	}
	if after := b.fleet(t); after != before {
		t.Errorf("the fleet changed from %+v to %+v", before, after)
	}
}
