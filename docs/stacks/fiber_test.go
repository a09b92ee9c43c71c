package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/worksteal/worksteal/recruiter"
)

func fiberApp(rec *recruiter.Recruiter) *fiber.App {
	app := fiber.New()
	app.Get("/items/:id", func(c *fiber.Ctx) error {
		item, ok := cache[c.Params("id")]
		if !ok {
			return fiber.ErrNotFound
		}
		enlistAfterResponse(c, rec) // a cache hit
		return c.Send(item)
	})
	return app
}

// enlistAfterResponse lends a fiber request's time to rec once fasthttp
// has written its response: fasthttp closes the io.Closer values of a
// request's Locals after it writes the response, and that ends the
// context the slice waits for. Background mode only: in inline mode
// (recruiter.Config.Inline) the slice would run here, before the response.
func enlistAfterResponse(c *fiber.Ctx, rec *recruiter.Recruiter) {
	draw := rec.Draw()
	if !draw.Recruited() {
		return // dismissed: no allocation, no Redis call
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.Locals(responseWritten{}, closeFunc(cancel))
	draw.Enlist(ctx, nil)
}

type responseWritten struct{}

// closeFunc is an io.Closer that calls itself.
type closeFunc func()

func (f closeFunc) Close() error {
	f()
	return nil
}
