package stacks

import (
	"net/http"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

func netHTTP(rec *recruiter.Recruiter) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if item, ok := cache[r.PathValue("id")]; ok {
			recruiter.MarkFastExit(r.Context()) // a cache hit: a fast exit
			w.Write(item)
			return
		}
		http.NotFound(w, r)
	})
	handler := stealhttp.Middleware(rec)(mux) // http.ListenAndServe(":8080", handler)
	return handler
}
