// Package flow maps the storage's chain and join states to the states of
// a flow (a chain or a fan-out): the one mapping that package tasks and
// package inspect read a flow's state through. Each of them owns its
// state type and names its values in a [States]; the mapping is here.
package flow
