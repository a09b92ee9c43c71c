package stacks

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// getItemPath is the procedure of the connect snippets: generated code
// names it catalogv1connect.CatalogServiceGetItemProcedure.
const getItemPath = "/catalog.v1.CatalogService/GetItem"

func connectServer(rec *recruiter.Recruiter) *http.Server {
	getItem := func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.BytesValue], error) {
		if item, ok := cache[req.Msg.GetValue()]; ok {
			recruiter.MarkFastExit(ctx) // the HTTP request's context: the mark reaches stealhttp
			return connect.NewResponse(wrapperspb.Bytes(item)), nil
		}
		return nil, connect.NewError(connect.CodeNotFound, errors.New("no such item"))
	}
	mux := http.NewServeMux()
	mux.Handle(getItemPath, connect.NewUnaryHandler(getItemPath, getItem)) // generated: mux.Handle(catalogv1connect.NewCatalogServiceHandler(svc))
	srv := &http.Server{Addr: ":8080", Handler: stealhttp.Middleware(rec)(mux), Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true) // gRPC clients of connect speak HTTP/2 without TLS
	return srv
}

func connectInterceptor(rec *recruiter.Recruiter) http.Handler {
	markHits := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			res, err := next(ctx, req)
			if err == nil && res.Header().Get("X-Cache") == "hit" {
				recruiter.MarkFastExit(ctx) // a successful call answered from the cache
			}
			return res, err
		}
	})
	mux := http.NewServeMux()
	mux.Handle(getItemPath, connect.NewUnaryHandler(getItemPath, lookUp, connect.WithInterceptors(markHits)))
	return stealhttp.Middleware(rec)(mux)
}

// lookUp is a connect handler that says where its answer came from.
func lookUp(_ context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.BytesValue], error) {
	item, ok := cache[req.Msg.GetValue()]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("no such item"))
	}
	res := connect.NewResponse(wrapperspb.Bytes(item))
	res.Header().Set("X-Cache", "hit")
	return res, nil
}
