package main

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"

	stealecho "github.com/worksteal/worksteal/middleware/echo"
)

// echoRoutes is the shop on echo v4: the same routes as on net/http.
// otelecho comes first, so that stealecho's draws see the request span.
func (a *app) echoRoutes(tel *otelSetup) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(otelecho.Middleware("echo",
		otelecho.WithTracerProvider(tel.tracers),
		otelecho.WithPropagators(tel.propagators)))
	e.Use(stealecho.Middleware(a.rec))
	e.GET("/items/:id", a.echoGetItem)
	e.POST("/orders", a.echoPlaceOrder)
	e.GET("/orders/:id", a.echoOrderStatus)
	return e
}

func (a *app) echoGetItem(c echo.Context) error {
	a.count.echo.Add(1)
	id, err := strconv.Atoi(c.Param("id"))
	if err != nil {
		return echoError(fmt.Errorf("%w: %q", errNoSuchItem, c.Param("id")))
	}
	it, err := a.getItem(c.Request().Context(), id)
	if err != nil {
		return echoError(err)
	}
	c.Response().Header().Set("X-Cache", cacheHeader(it.Cached))
	return c.JSON(http.StatusOK, it)
}

func (a *app) echoPlaceOrder(c echo.Context) error {
	a.count.echo.Add(1)
	// JSON whatever the Content-Type, as on net/http: curl -d sends a form's.
	o, err := decodeOrder(c.Response(), c.Request().Body)
	if err != nil {
		return echoError(err)
	}
	id, err := a.placeOrder(c.Request().Context(), o)
	if err != nil {
		return echoError(err)
	}
	c.Response().Header().Set("Location", "/orders/"+id)
	return c.JSON(http.StatusAccepted, orderResponse{ID: id, Status: waitStatus, Step: 1, Steps: len(orderSteps), Task: orderSteps[0]})
}

func (a *app) echoOrderStatus(c echo.Context) error {
	a.count.echo.Add(1)
	p, err := a.orderStatus(c.Request().Context(), c.Param("id"))
	if err != nil {
		return echoError(err)
	}
	return c.JSON(statusCode(p.Status), newOrderResponse(c.Param("id"), p))
}

// echoError is an *echo.HTTPError, which echo's error handler writes as
// {"message": ...} with its code.
func echoError(err error) error {
	return echo.NewHTTPError(errorCode(err), err.Error()).SetInternal(err)
}
