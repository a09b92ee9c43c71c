package stacks

import (
	"net/http"

	echov4 "github.com/labstack/echo/v4"
	"github.com/labstack/echo/v5"

	stealecho4 "github.com/worksteal/worksteal/middleware/echo"
	stealecho "github.com/worksteal/worksteal/middleware/echov5"
	"github.com/worksteal/worksteal/recruiter"
)

func echoV5(rec *recruiter.Recruiter) http.Handler {
	e := echo.New()
	e.Use(stealecho.Middleware(rec))
	e.GET("/items/:id", func(c *echo.Context) error {
		if item, ok := cache[c.Param("id")]; ok {
			recruiter.MarkFastExit(c.Request().Context())
			return c.Blob(http.StatusOK, "application/json", item)
		}
		return echo.ErrNotFound // an error: echo's error handler writes it, and the middleware classifies what it writes
	})
	return e
}

// echoV4 is echoV5 on echo v4, whose context is an interface: the
// page shows echo v5's, with a note.
func echoV4(rec *recruiter.Recruiter) http.Handler {
	e := echov4.New()
	e.Use(stealecho4.Middleware(rec))
	e.GET("/items/:id", func(c echov4.Context) error {
		if item, ok := cache[c.Param("id")]; ok {
			recruiter.MarkFastExit(c.Request().Context())
			return c.Blob(http.StatusOK, "application/json", item)
		}
		return echov4.ErrNotFound
	})
	return e
}
