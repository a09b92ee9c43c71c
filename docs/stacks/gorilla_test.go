package stacks

import (
	"net/http"

	"github.com/gorilla/mux"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

func gorillaMux(rec *recruiter.Recruiter) http.Handler {
	r := mux.NewRouter()
	r.Use(stealhttp.Middleware(rec)) // runs on requests that match a route
	r.HandleFunc("/items/{id}", func(w http.ResponseWriter, req *http.Request) {
		if item, ok := cache[mux.Vars(req)["id"]]; ok {
			recruiter.MarkFastExit(req.Context())
			w.Write(item)
			return
		}
		http.NotFound(w, req)
	}).Methods(http.MethodGet)
	return r
}
