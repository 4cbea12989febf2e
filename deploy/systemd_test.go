package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const unitFile = "systemd/decant@.service"

// unitCopy writes the unit, its ExecStart pointing at a decant binary
// built for the test (systemd-analyze verify wants an executable there),
// into a temporary directory, with the credentials drop-in beside it.
func unitCopy(t *testing.T) string {
	t.Helper()
	unit := string(read(t, unitFile))
	if !strings.Contains(unit, "ExecStart=/usr/local/bin/decant run\n") {
		t.Fatalf("%s: no ExecStart=/usr/local/bin/decant run", unitFile)
	}
	dir := t.TempDir()
	unit = strings.Replace(unit, "ExecStart=/usr/local/bin/decant", "ExecStart="+decantBinary(t), 1)
	write(t, filepath.Join(dir, "decant@.service"), unit)
	dropIn := filepath.Join(dir, "decant@.service.d")
	if err := os.Mkdir(dropIn, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dropIn, "credentials.conf"), string(read(t, "systemd/credentials.conf.example")))
	return dir
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// verify runs systemd-analyze verify on the template and an instance of
// it and returns what it printed. It exits 0 on mistakes it only warns
// about (an unknown key, a bad value), so the output must be empty too.
func verify(t *testing.T, dir string) string {
	t.Helper()
	tool := need(t, "systemd-analyze")
	var out strings.Builder
	for _, unit := range []string{"./decant@.service", "decant@shop.service"} {
		cmd := exec.Command(tool, "verify", "--man=no", unit)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		out.Write(b)
		if err != nil {
			out.WriteString(unit + ": " + err.Error() + "\n")
		}
	}
	return out.String()
}

// TestUnitVerifies: systemd-analyze verify accepts the unit and the
// credentials drop-in without a word.
func TestUnitVerifies(t *testing.T) {
	if out := verify(t, unitCopy(t)); out != "" {
		t.Fatalf("systemd-analyze verify %s:\n%s", unitFile, out)
	}
}

// TestUnitVerifyCatchesMistakes: the empty output above means something,
// since verify reports a misspelt key and a bad value in this unit.
func TestUnitVerifyCatchesMistakes(t *testing.T) {
	for _, mistake := range []struct{ from, to, said string }{
		{"RestartPreventExitStatus=2 3", "RestartPreventExitStatuz=2 3", "Unknown key 'RestartPreventExitStatuz'"},
		{"Restart=on-failure", "Restart=sometimes", "sometimes"},
	} {
		dir := unitCopy(t)
		path := filepath.Join(dir, "decant@.service")
		write(t, path, strings.Replace(string(read(t, path)), mistake.from, mistake.to, 1))
		if out := verify(t, dir); !strings.Contains(out, mistake.said) {
			t.Errorf("systemd-analyze verify said nothing about %q:\n%s", mistake.to, out)
		}
	}
}

// TestUnitRestartPolicy: systemd restarts decant after a runtime failure
// (1) or after it gave up on transient failures (4), and leaves it
// stopped after a configuration error (2) or one that needs a person (3),
// which would only happen again (cmd/decant/main.go's exit codes).
func TestUnitRestartPolicy(t *testing.T) {
	unit := string(read(t, unitFile))
	want := map[string]string{
		"Restart":                  "on-failure",
		"RestartPreventExitStatus": "2 3",
		"EnvironmentFile":          "/etc/decant/%i.env",
		"StateDirectory":           "decant/%i",
		"Environment":              "DECANT_SPILL_DIR=%S/decant/%i",
	}
	for key, value := range want {
		if !regexp.MustCompile(`(?m)^` + key + `=` + regexp.QuoteMeta(value) + `$`).MatchString(unit) {
			t.Errorf("%s: want %s=%s", unitFile, key, value)
		}
	}
	if !regexp.MustCompile(`(?m)^RestartSec=\d+s$`).MatchString(unit) {
		t.Errorf("%s: want a RestartSec", unitFile)
	}
}

var exposure = regexp.MustCompile(`Overall exposure level for decant@shop.service: (\d+\.\d+)`)

// TestUnitHardening: systemd-analyze security rates the unit's exposure
// (0 is best, 10 is none of its measures); keep it low.
func TestUnitHardening(t *testing.T) {
	tool := need(t, "systemd-analyze")
	dir := unitCopy(t)
	cmd := exec.Command(tool, "security", "--offline=yes", "--no-pager", "decant@shop.service")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // non-zero above its threshold, which is not ours
	m := exposure.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("systemd-analyze security printed no exposure level:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(m[1], 64); level > 2.0 {
		t.Errorf("exposure %s, want at most 2.0:\n%s", m[1], out)
	}
}
