package dashboard

import "time"

// NewManual is New without the sampler goroutine: the
// test takes each sample with SampleAt, at the times it chooses.
func NewManual(src Source, opts ...Option) (*Dashboard, error) {
	d, err := newDashboard(src, opts...)
	if err != nil {
		return nil, err
	}
	close(d.done)
	return d, nil
}

// SampleAt takes one sample dated now.
func (d *Dashboard) SampleAt(now time.Time) { d.sampleAt(now) }

// CSPHash is the CSP source expression of an inline script or style.
func CSPHash(s string) string { return cspHash(s) }

// SetClock sets the clock the page is rendered at.
func (d *Dashboard) SetClock(now func() time.Time) { d.now = now }
