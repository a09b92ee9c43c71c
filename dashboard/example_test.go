package dashboard_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/recruiter"
)

type userKey struct{}

// operators stands for the host's session store: session cookie → user.
var operators = map[string]string{}

// requireOperator is the host's own auth middleware: the dashboard
// authenticates no one, so every request, the page and its actions
// alike, passes here first. It puts the user in the request's context,
// where the dashboard's who function reads it.
func requireOperator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("session")
		if err != nil || operators[c.Value] == "" {
			http.Error(w, "sign in as an operator", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, operators[c.Value])))
	})
}

// Actions mounted behind the host's auth: the answer to "who may retry
// or purge from the page" is the host's own middleware, and the
// dashboard records who did what.
func ExampleWithActions() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	in, err := inspect.New(rdb, inspect.Config{}) // the same Prefix as the fleet's
	if err != nil {
		log.Fatal(err)
	}
	// 32 random bytes or more, the same on every replica behind the load
	// balancer, so that a page served by one is accepted by another.
	key := []byte(os.Getenv("DASHBOARD_ACTION_KEY"))
	d, err := dashboard.New(rec, dashboard.WithActions(in, key, func(r *http.Request) string {
		user, _ := r.Context().Value(userKey{}).(string)
		return user
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/worksteal", requireOperator(d))
	log.Fatal(http.ListenAndServe("localhost:8081", mux))
}
