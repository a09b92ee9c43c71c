package stealgin_test

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	stealgin "github.com/worksteal/worksteal/middleware/gin"
	"github.com/worksteal/worksteal/recruiter"
)

// Five lines: a recruiter, a job, the middleware on a gin engine, and
// handlers that say when they answered cheaply.
func ExampleMiddleware() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, _ := recruiter.New(rdb, recruiter.Config{})
	rec.Register(recruiter.Func("trim-audit-log", trimAuditLog(rdb)), recruiter.JobConfig{Every: time.Minute})
	r := gin.New()
	r.Use(gin.Recovery(), stealgin.Middleware(rec))
	r.GET("/items/:id", func(c *gin.Context) {
		if item, ok := cache[c.Param("id")]; ok {
			recruiter.MarkFastExit(c.Request.Context()) // a cache hit: this request may lend its time
			c.Data(http.StatusOK, "application/json", item)
			return
		}
		c.AbortWithStatus(http.StatusNotFound)
	})
	r.Run(":8080")
}

// Keep admin routes out of recruitment, and count any quick 200 as a fast
// exit too; on one group only.
func ExampleMiddlewareWithConfig() {
	var rec *recruiter.Recruiter // from recruiter.New
	r := gin.New()
	api := r.Group("/api")
	api.Use(stealgin.MiddlewareWithConfig(stealgin.Config{
		Recruiter: rec,
		Skipper:   func(c *gin.Context) bool { return strings.HasPrefix(c.FullPath(), "/api/admin") },
		Classifier: func(x stealgin.Exit) bool {
			return stealgin.DefaultClassifier(x) || x.Status == http.StatusOK && len(x.Errors) == 0 && x.Elapsed < 2*time.Millisecond
		},
	}))
}

var cache = map[string][]byte{}

func trimAuditLog(rdb *redis.Client) func(context.Context) (recruiter.Report, error) {
	return func(ctx context.Context) (recruiter.Report, error) {
		n, err := rdb.XTrimMaxLenApprox(ctx, "audit", 100_000, 500).Result()
		return recruiter.Report{Items: int(n), More: n == 500}, err
	}
}
