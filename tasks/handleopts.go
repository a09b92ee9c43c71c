package tasks

import "time"

// HandleOption sets how the handler of one task type runs, at
// [Task.Handle]: [Timeout].
type HandleOption interface{ applyHandle(*handleConfig) }

type handleOptionFunc func(*handleConfig)

func (f handleOptionFunc) applyHandle(c *handleConfig) { f(c) }

// handleConfig is what a type's HandleOptions set.
type handleConfig struct {
	retryDelay func(attempt int, err error) time.Duration // see RetryDelay; nil: the queue's backoff
	timeout    time.Duration                              // Timeout's; 0: none
}

func newHandleConfig(opts []HandleOption) handleConfig {
	var c handleConfig
	for _, o := range opts {
		if o != nil {
			o.applyHandle(&c)
		}
	}
	return c
}
