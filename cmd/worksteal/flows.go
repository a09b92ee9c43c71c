package main

// chain and fanout show a flow as inspect.Inspector.Chain and FanOut read it.

import (
	"context"
	"fmt"
	"strconv"
)

type jsonChain struct {
	ID      string `json:"id"`
	Queue   string `json:"queue"`
	State   string `json:"state"` // running, done, failed, canceled, unknown
	Step    int    `json:"step"`
	Steps   int    `json:"steps"`
	Current string `json:"current"`
	Cause   string `json:"cause,omitempty"`
}

type jsonFanOut struct {
	ID        string `json:"id"`
	Queue     string `json:"queue"`
	State     string `json:"state"` // running, done, failed, canceled, unknown
	Children  int    `json:"children"`
	Done      int    `json:"done"`
	Dead      int    `json:"dead"`
	DeadChild string `json:"dead_child,omitempty"`
	Cause     string `json:"cause,omitempty"`
}

func cmdChain(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 2, 2, "QUEUE ID"); err != nil {
		return err
	}
	ch, err := c.in.Chain(ctx, args[0], args[1])
	if err != nil {
		return err
	}
	if c.g.json {
		return c.json(jsonChain{ID: ch.ID, Queue: args[0], State: ch.State.String(), Step: ch.Step, Steps: ch.Steps,
			Current: ch.Current, Cause: ch.Cause})
	}
	rows := [][]string{{"id", ch.ID}, {"queue", args[0]}, {"state", ch.State.String()},
		{"step", fmt.Sprintf("%d of %d", ch.Step, ch.Steps)}, {"current", ch.Current}}
	if ch.Cause != "" {
		rows = append(rows, []string{"cause", preview([]byte(ch.Cause), 200)})
	}
	return c.table("FIELD\tVALUE", rows)
}

func cmdFanOut(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(c, args, 2, 2, "QUEUE ID"); err != nil {
		return err
	}
	j, err := c.in.FanOut(ctx, args[0], args[1])
	if err != nil {
		return err
	}
	if c.g.json {
		return c.json(jsonFanOut{ID: j.ID, Queue: args[0], State: j.State.String(), Children: j.Children, Done: j.Done,
			Dead: j.Dead, DeadChild: j.DeadChild, Cause: j.Cause})
	}
	rows := [][]string{{"id", j.ID}, {"queue", args[0]}, {"state", j.State.String()},
		{"children", strconv.Itoa(j.Children)}, {"done", strconv.Itoa(j.Done)}, {"dead", strconv.Itoa(j.Dead)}}
	if j.DeadChild != "" {
		rows = append(rows, []string{"dead child", j.DeadChild})
	}
	if j.Cause != "" {
		rows = append(rows, []string{"cause", preview([]byte(j.Cause), 200)})
	}
	return c.table("FIELD\tVALUE", rows)
}
