package main

import (
	"os"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/notify"
)

// fileSettings is what the --config file says: a value per flag, and the
// column rules, which only the file can give.
type fileSettings struct {
	path    string
	values  map[string]fileValue // by flag name
	columns map[string]mapping.ColumnRules
	// webhooks are the webhooks: entries, which add to --webhook.
	webhooks []notify.Target
	// conflicts are the conflicts: policies, KIND=POLICY by source table.
	conflicts map[string][]string
}

// fileValue is one key's value and where it is, for errors.
type fileValue struct {
	key  string
	line int
	node *yaml.Node
}

// yamlLine finds the line in the YAML parser's errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// readSettings reads the --config file. A key no command has is an error
// naming its line; a key of another command is left to that command.
func readSettings(path string, known map[string]bool) (fileSettings, error) {
	file := fileSettings{path: path, values: map[string]fileValue{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return file, usagef("read config file: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			return file, usagef("%s line %s: %s", path, m[1], strings.TrimPrefix(err.Error(), m[0]))
		}
		return file, usagef("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return file, nil // empty
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return file, usagef("%s line %d: want key: value lines (the README's configuration section shows a file)", path, top.Line)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch {
		case k.Value == "columns":
			err = file.readColumns(v)
		case k.Value == "webhooks":
			err = file.readWebhooks(v)
		case k.Value == "conflicts":
			err = file.readConflicts(v)
		case k.Value == "source" && v.Kind == yaml.MappingNode:
			err = file.readSource(v)
		case known[k.Value]:
			err = file.add(k, v)
		default:
			err = unknownKey(path, k.Line, k.Value, known)
		}
		if err != nil {
			return file, err
		}
	}
	return file, nil
}

// add records a key's value, once.
func (f *fileSettings) add(k, v *yaml.Node) error {
	flag := strings.ReplaceAll(k.Value, "_", "-")
	if prev, ok := f.values[flag]; ok {
		return usagef("%s line %d: %s is already given on line %d; keep one", f.path, k.Line, k.Value, prev.line)
	}
	f.values[flag] = fileValue{key: k.Value, line: k.Line, node: v}
	return nil
}

// readSource reads the source's long form {dsn, kind, options}: the
// values of source, source_kind and source_option.
func (f *fileSettings) readSource(n *yaml.Node) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name, ok := map[string]string{"dsn": "source", "kind": "source_kind", "options": "source_option"}[k.Value]
		if !ok {
			return usagef("%s line %d: unknown key %q under source (want dsn, kind or options)", f.path, k.Line, k.Value)
		}
		key := *k
		key.Value = name
		if err := f.add(&key, v); err != nil {
			return err
		}
	}
	return nil
}

// set gives a flag the file's value: a scalar as on the command line, a
// list for a list or a repeatable flag, a mapping for name=value pairs.
func (f *fileSettings) set(fl *pflag.Flag, e fileValue) error {
	n := e.node
	typ := fl.Value.Type()
	switch {
	case n.Tag == "!!null":
		return nil // key: with nothing after it
	case typ == "stringToString":
		if n.Kind != yaml.MappingNode {
			return usagef("%s line %d: %s: want a mapping of name: value", f.path, e.line, e.key)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v := n.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return usagef("%s line %d: %s: want a mapping of name: value", f.path, v.Line, e.key)
			}
			if err := f.setText(fl, e, v.Line, pairText(n.Content[i].Value, v.Value)); err != nil {
				return err
			}
		}
		return nil
	case n.Kind == yaml.SequenceNode && (typ == "stringArray" || typ == "LIST"):
		items := make([]string, 0, len(n.Content))
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				return usagef("%s line %d: %s: want a list of values", f.path, it.Line, e.key)
			}
			items = append(items, it.Value)
		}
		if typ == "LIST" {
			items = []string{strings.Join(items, ",")}
		}
		for _, it := range items {
			if err := f.setText(fl, e, n.Line, it); err != nil {
				return err
			}
		}
		return nil
	case n.Kind == yaml.ScalarNode:
		return f.setText(fl, e, n.Line, n.Value)
	}
	return usagef("%s line %d: %s takes one value, not a list or a mapping", f.path, e.line, e.key)
}

// setText sets a flag from a text of the file's line.
func (f *fileSettings) setText(fl *pflag.Flag, e fileValue, line int, v string) error {
	if err := fl.Value.Set(v); err != nil {
		return usagef("%s line %d: invalid %s %q: %s", f.path, line, e.key, v, valueHint(fl, err))
	}
	return nil
}

// readColumns reads columns: {schema.table: {rename: {old: new},
// exclude: [column]}}.
func (f *fileSettings) readColumns(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return usagef("%s line %d: columns: want schema.table: {rename: {old: new}, exclude: [column]}", f.path, n.Line)
	}
	f.columns = map[string]mapping.ColumnRules{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		table, rules := n.Content[i], n.Content[i+1]
		if rules.Kind != yaml.MappingNode {
			return usagef("%s line %d: columns %s: want rename: {old: new} and exclude: [column]", f.path, rules.Line, table.Value)
		}
		var r mapping.ColumnRules
		for j := 0; j+1 < len(rules.Content); j += 2 {
			k, v := rules.Content[j], rules.Content[j+1]
			var err error
			switch k.Value {
			case "rename":
				r.Rename, err = f.scalarMap(v, table.Value)
			case "exclude":
				r.Exclude, err = f.scalarList(v, table.Value)
			default:
				err = usagef("%s line %d: unknown key %q under columns %s (want rename or exclude)", f.path, k.Line, k.Value, table.Value)
			}
			if err != nil {
				return err
			}
		}
		f.columns[table.Value] = r
	}
	return nil
}

func (f *fileSettings) scalarMap(n *yaml.Node, table string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, usagef("%s line %d: columns %s rename: want {old: new}", f.path, n.Line, table)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i+1].Kind != yaml.ScalarNode {
			return nil, usagef("%s line %d: columns %s rename: want {old: new}", f.path, n.Content[i+1].Line, table)
		}
		m[n.Content[i].Value] = n.Content[i+1].Value
	}
	return m, nil
}

func (f *fileSettings) scalarList(n *yaml.Node, table string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, usagef("%s line %d: columns %s exclude: want a list [column, ...]", f.path, n.Line, table)
	}
	var out []string
	for _, it := range n.Content {
		if it.Kind != yaml.ScalarNode {
			return nil, usagef("%s line %d: columns %s exclude: want a list [column, ...]", f.path, it.Line, table)
		}
		out = append(out, it.Value)
	}
	return out, nil
}
