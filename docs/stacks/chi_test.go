package stacks

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

func chiRouter(rec *recruiter.Recruiter) http.Handler {
	r := chi.NewRouter()
	r.Use(stealhttp.Middleware(rec)) // chi wants every r.Use before the routes
	r.Get("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if item, ok := cache[chi.URLParam(r, "id")]; ok {
			recruiter.MarkFastExit(r.Context())
			w.Write(item)
			return
		}
		http.NotFound(w, r)
	})
	return r
}
