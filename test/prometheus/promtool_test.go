//go:build prometheus

package prometheus_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulesCheck: promtool finds the rules file valid, with the six
// alerts of docs/operations.md.
func TestRulesCheck(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(tool(t, "promtool"), "check", "rules", rulesFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SUCCESS: 6 rules found") {
		t.Errorf("promtool check rules:\n%s\nwant 6 rules", out)
	}
}

// TestRulesUnitTests: the rules' promtool unit tests pass: each alert
// fires on the series that should make it fire, over two replicas, and
// clears.
func TestRulesUnitTests(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(tool(t, "promtool"), "test", "rules", filepath.Base(rulesTestFile))
	cmd.Dir = filepath.Dir(rulesTestFile)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
