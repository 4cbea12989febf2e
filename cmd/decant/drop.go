package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/source/pgoutput"
)

func dropCmd() *cobra.Command {
	var f flags
	var yes bool
	cmd := &cobra.Command{
		Use:   "drop",
		Short: "Remove the pipeline's slot, publication and checkpoint row",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if !yes {
				return usagef("drop removes slot, publication and checkpoint of pipeline %s; add --yes to confirm", c.Pipeline)
			}
			ctx := cmd.Context()
			if c.gaussSource() {
				slot, row, err := dropGauss(ctx, c)
				if err != nil {
					return err
				}
				fmt.Printf("pipeline %s: slot %s, checkpoint %s\n", c.Pipeline, done(slot), done(row))
				return nil
			}
			src, tgt, err := connectBoth(ctx, c)
			if err != nil {
				return err
			}
			defer src.Close(ctx)
			defer tgt.Close(ctx)

			slot, err := pgoutput.DropSlot(ctx, src, c.Pipeline)
			if err != nil {
				return err
			}
			pub, err := pgoutput.DropPublication(ctx, src, c.Pipeline)
			if err != nil {
				return err
			}
			trigger, err := pgoutput.RemoveDDLCapture(ctx, src, c.Pipeline)
			if err != nil {
				return err
			}
			if trigger {
				fmt.Printf("pipeline %s: DDL capture removed\n", c.Pipeline)
			}
			if err := tgt.ForgetSchema(ctx); err != nil {
				return err
			}
			if err := bulk.Forget(ctx, c.Target, c.Pipeline); err != nil {
				return err
			}
			row, err := tgt.DeleteCheckpoint(ctx, c.Pipeline)
			if err != nil {
				return err
			}
			fmt.Printf("pipeline %s: slot %s, publication %s, checkpoint %s\n", c.Pipeline, done(slot), done(pub), done(row))
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
