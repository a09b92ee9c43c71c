package stacks

import (
	"net/http"

	"github.com/gin-gonic/gin"

	stealgin "github.com/worksteal/worksteal/middleware/gin"
	"github.com/worksteal/worksteal/recruiter"
)

func ginEngine(rec *recruiter.Recruiter) http.Handler {
	r := gin.New()
	r.Use(gin.Recovery(), stealgin.Middleware(rec))
	r.GET("/items/:id", func(c *gin.Context) {
		if item, ok := cache[c.Param("id")]; ok {
			recruiter.MarkFastExit(c.Request.Context()) // c.Request.Context(), not c
			c.Data(http.StatusOK, "application/json", item)
			return
		}
		c.AbortWithStatus(http.StatusNotFound)
	})
	return r
}
