package deploy

import (
	"debug/elf"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, its continuation lines
// joined.
type instruction struct{ cmd, args string }

// dockerStages splits the Dockerfile into stages, each a list of
// instructions; stage 0 holds what comes before the first FROM.
func dockerStages(text string) [][]instruction {
	stages := [][]instruction{nil}
	var line string
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") || (t == "" && line == "") {
			continue
		}
		line += strings.TrimSpace(l) + " "
		if strings.HasSuffix(line, "\\ ") {
			line = strings.TrimSuffix(line, "\\ ")
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(line), " ")
		line = ""
		in := instruction{strings.ToUpper(cmd), args}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

func find(stage []instruction, cmd string) []string {
	var out []string
	for _, in := range stage {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// TestDockerfile checks what docker build cannot be run here to show:
// the builder's Go is go.mod's, the build is static and trimmed, and the
// final image has no shell to run and a non-root user.
func TestDockerfile(t *testing.T) {
	stages := dockerStages(string(read(t, "Dockerfile")))
	if len(stages) != 3 {
		t.Fatalf("%d stages, want a builder and a final one", len(stages)-1)
	}
	goMod := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(read(t, "../go.mod")))
	if goMod == nil {
		t.Fatal("go.mod names no go version")
	}
	if args := find(stages[0], "ARG"); len(args) != 1 || args[0] != "GO_VERSION="+goMod[1] {
		t.Errorf("ARG %v, want GO_VERSION=%s as in go.mod", args, goMod[1])
	}
	build, final := stages[1], stages[2]
	if from := find(build, "FROM"); from[0] != "golang:${GO_VERSION} AS build" {
		t.Errorf("builder FROM %q", from[0])
	}
	var built bool
	for _, r := range find(build, "RUN") {
		if strings.Contains(r, "go build") {
			built = strings.Contains(r, "CGO_ENABLED=0") && strings.Contains(r, "-trimpath") && strings.Contains(r, "./cmd/decant")
		}
	}
	if !built {
		t.Error("the builder does not run CGO_ENABLED=0 go build -trimpath ... ./cmd/decant")
	}
	from := find(final, "FROM")[0]
	if !strings.HasPrefix(from, "gcr.io/distroless/static") && from != "scratch" {
		t.Errorf("final FROM %q, want distroless static or scratch", from)
	}
	if runs := find(final, "RUN"); len(runs) > 0 {
		t.Errorf("the final stage runs %v, but it has no shell", runs)
	}
	users := find(final, "USER")
	if len(users) != 1 {
		t.Fatalf("final stage USER %v", users)
	}
	if uid, err := strconv.Atoi(strings.Split(users[0], ":")[0]); err != nil || uid == 0 {
		t.Errorf("USER %q, want a numeric non-root user", users[0])
	}
	var entry []string
	if e := find(final, "ENTRYPOINT"); len(e) != 1 || json.Unmarshal([]byte(e[0]), &entry) != nil || len(entry) != 1 {
		t.Fatalf("ENTRYPOINT %v, want the exec form [\"/decant\"]", e)
	}
	if copies := find(final, "COPY"); len(copies) != 1 || !strings.HasSuffix(copies[0], " "+entry[0]) {
		t.Errorf("the final stage copies %v, not the binary to %s", copies, entry[0])
	}
}

// TestBinaryIsStatic builds decant as the Dockerfile does and checks that
// the binary needs no dynamic loader or library, which distroless/static
// and scratch do not have, and that it runs.
func TestBinaryIsStatic(t *testing.T) {
	bin := decantBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader (PT_INTERP)")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs libraries %v (%v)", libs, err)
	}
	if out := run(t, ".", bin, "--version"); !strings.HasPrefix(out, "decant ") {
		t.Errorf("decant --version printed %q", out)
	}
}
