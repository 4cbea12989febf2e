package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
)

func dropCmd() *cobra.Command {
	var f flags
	var yes bool
	cmd := &cobra.Command{
		Use:   "drop",
		Short: "Remove the pipeline's slot, publication and checkpoint row",
		Long: `Drops the pipeline's slot (refused while decant run uses it), its
publication and append-only publication, its DDL capture, the table definitions and copy state it keeps
on the target, the replication origins its apply sessions use on a
PostgreSQL target, and its checkpoint row. A GaussDB or openGauss pipeline has
a slot, definitions and a checkpoint row only.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if !yes {
				return usagef("drop removes slot, publication and checkpoint of pipeline %s; add --yes to confirm", c.Pipeline)
			}
			if c.gaussSource() {
				d, err := migrate.DropGauss(cmd.Context(), c.workflow(nil))
				if err != nil {
					return err
				}
				fmt.Printf("pipeline %s: slot %s, checkpoint %s\n", c.Pipeline, done(d.Slot), done(d.Checkpoint))
				return nil
			}
			d, err := migrate.Drop(cmd.Context(), c.workflow(nil))
			if d.DDLCapture {
				fmt.Printf("pipeline %s: DDL capture removed\n", c.Pipeline)
			}
			if err != nil {
				return err
			}
			fmt.Printf("pipeline %s: slot %s, publication %s, append-only publication %s, checkpoint %s, replication origins dropped: %d\n",
				c.Pipeline, done(d.Slot), done(d.Publication), done(d.AppendOnlyPublication), done(d.Checkpoint), d.Origins)
			return nil
		},
	}
	addFlags(cmd, &f, false)
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm")
	return cmd
}

func done(dropped bool) string {
	if dropped {
		return "dropped"
	}
	return "absent"
}
