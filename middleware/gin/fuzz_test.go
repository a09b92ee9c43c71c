package stealgin_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgin "github.com/worksteal/worksteal/middleware/gin"
)

// FuzzMiddlewareExit: whatever a drawn request's chain writes, sets,
// aborts with or attaches, the classifier's Status is what the client
// gets, and the default classifier never calls a 5xx or an attached error
// a fast exit.
func FuzzMiddlewareExit(f *testing.F) {
	f.Add(uint8(0), uint16(204), false, true)
	f.Add(uint8(1), uint16(304), false, true)
	f.Add(uint8(2), uint16(503), false, true)
	f.Add(uint8(3), uint16(200), true, true)
	f.Add(uint8(4), uint16(404), false, false)
	f.Add(uint8(5), uint16(200), false, true)
	rig := stealtest.New(f, false)
	rig.Draw() // every request is drawn; the classifier below runs no slice
	var seen stealgin.Exit
	var seenErrors int
	r := gin.New()
	r.Use(stealgin.MiddlewareWithConfig(stealgin.Config{
		Recruiter: rig.Rec,
		Classifier: func(x stealgin.Exit) bool {
			seen, seenErrors = x, len(x.Errors)
			seen.Context, seen.Errors = nil, nil
			return false
		},
	}))
	var how uint8
	var code int
	var attach, mark bool
	r.GET("/", func(c *gin.Context) {
		if mark {
			marked(c)
		}
		if attach {
			_ = c.Error(errors.New("attached"))
		}
		switch how % 6 {
		case 0:
			c.Status(code) // written by gin after the chain
		case 1:
			c.AbortWithStatus(code)
		case 2:
			c.String(code, "body")
		case 3:
			c.Status(code)
			c.Writer.WriteHeaderNow()
			c.Status(http.StatusTeapot) // too late: gin keeps the status written
		case 4:
			c.Writer.WriteString("implied 200")
			c.Status(code)
		}
	})

	f.Fuzz(func(t *testing.T, h uint8, c uint16, a, m bool) {
		how, code, attach, mark = h, 200+int(c)%400, a, m // 2xx to 5xx
		seen = stealgin.Exit{}
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if seen.Status != rec.Code || seen.Marked != m || seenErrors != map[bool]int{true: 1}[a] {
			t.Fatalf("classifier saw status %d, marked %v, %d errors; the client got %d (marked %v, attached %v)", seen.Status, seen.Marked, seenErrors, rec.Code, m, a)
		}
		seen.Errors = make([]*gin.Error, seenErrors)
		if (rec.Code >= 500 || a) && stealgin.DefaultClassifier(seen) {
			t.Fatalf("DefaultClassifier calls a %d (attached %v) a fast exit", rec.Code, a)
		}
	})
}
