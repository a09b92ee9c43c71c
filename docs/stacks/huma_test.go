package stacks

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

type itemInput struct {
	ID string `path:"id"`
}

type itemOutput struct {
	Body []byte
}

func humaAPI(rec *recruiter.Recruiter) http.Handler {
	mux := http.NewServeMux()
	api := humago.New(mux, huma.DefaultConfig("Catalog", "1.0.0"))
	huma.Get(api, "/items/{id}", func(ctx context.Context, in *itemInput) (*itemOutput, error) {
		if item, ok := cache[in.ID]; ok {
			recruiter.MarkFastExit(ctx) // huma passes the request's context
			return &itemOutput{Body: item}, nil
		}
		return nil, huma.Error404NotFound("no such item")
	})
	return stealhttp.Middleware(rec)(mux)
}
