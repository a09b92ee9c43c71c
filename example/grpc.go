package main

import (
	"context"
	"errors"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/example/catalogpb"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
)

// grpcServer is the shop on gRPC, with server reflection so that grpcurl
// can call it without the .proto. otelgrpc's stats handler starts each
// RPC's span before the interceptors run, so the recruitment spans link to
// it.
func (a *app) grpcServer(tel *otelSetup) *grpc.Server {
	s := grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(tel.tracers),
			otelgrpc.WithMeterProvider(tel.meters),
			otelgrpc.WithPropagators(tel.propagators))),
		grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(a.rec)),
		grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(a.rec)),
	)
	catalogpb.RegisterCatalogServer(s, &grpcCatalog{app: a})
	reflection.Register(s)
	return s
}

// grpcCatalog implements catalogpb.CatalogServer on the app.
type grpcCatalog struct {
	catalogpb.UnimplementedCatalogServer
	app *app
}

func (g *grpcCatalog) GetItem(ctx context.Context, req *catalogpb.GetItemRequest) (*catalogpb.Item, error) {
	g.app.count.grpc.Add(1)
	it, err := g.app.getItem(ctx, int(req.GetId()))
	if err != nil {
		return nil, grpcError(err)
	}
	return &catalogpb.Item{Id: int32(it.ID), Name: it.Name, PriceCents: it.PriceCents, Cached: it.Cached}, nil
}

func (g *grpcCatalog) PlaceOrder(ctx context.Context, req *catalogpb.PlaceOrderRequest) (*catalogpb.PlaceOrderResponse, error) {
	g.app.count.grpc.Add(1)
	id, err := g.app.placeOrder(ctx, order{Customer: req.GetCustomer(), ItemID: int(req.GetItemId()), Quantity: int(req.GetQuantity())})
	if err != nil {
		return nil, grpcError(err)
	}
	return &catalogpb.PlaceOrderResponse{OrderId: id}, nil
}

func (g *grpcCatalog) OrderStatus(ctx context.Context, req *catalogpb.OrderStatusRequest) (*catalogpb.OrderStatusResponse, error) {
	g.app.count.grpc.Add(1)
	p, err := g.app.orderStatus(ctx, req.GetOrderId())
	if err != nil {
		return nil, grpcError(err)
	}
	return &catalogpb.OrderStatusResponse{Status: p.Status, Confirmation: p.Confirmation,
		Step: int32(p.Step), Steps: int32(p.Steps), Task: p.Task, Cause: p.Cause}, nil
}

// grpcError maps the shop's errors to gRPC codes.
func grpcError(err error) error {
	code := codes.Unavailable
	switch {
	case errors.Is(err, errNoSuchItem), errors.Is(err, errNoSuchOrder):
		code = codes.NotFound
	case errors.Is(err, errBadOrder):
		code = codes.InvalidArgument
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}
