package flow

import "github.com/worksteal/worksteal/internal/qstore"

// States are a package's values for each state a flow can be in.
// Unknown is what a state the storage does not name maps to.
type States[S any] struct {
	Unknown, Running, Done, Failed, Canceled S
}

// Chain is the state of a chain whose storage state is s.
func (v States[S]) Chain(s qstore.ChainState) S {
	switch s {
	case qstore.ChainRunning:
		return v.Running
	case qstore.ChainDone:
		return v.Done
	case qstore.ChainFailed:
		return v.Failed
	case qstore.ChainCanceled:
		return v.Canceled
	}
	return v.Unknown
}

// Join is the state of a fan-out whose storage (join) state is s.
func (v States[S]) Join(s qstore.JoinState) S {
	switch s {
	case qstore.JoinRunning:
		return v.Running
	case qstore.JoinDone:
		return v.Done
	case qstore.JoinFailed:
		return v.Failed
	case qstore.JoinCanceled:
		return v.Canceled
	}
	return v.Unknown
}
