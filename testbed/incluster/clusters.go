package incluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

func (b *Bed) createClusters(ctx context.Context) error {
	if err := b.saveState(); err != nil {
		return err
	}
	var mu sync.Mutex
	errs := make([]error, len(b.env.Members))
	sem := make(chan struct{}, 3)
	if b.opts.DryRun {
		sem = make(chan struct{}, 1) // a plan reads in topology order
	}
	var wg sync.WaitGroup
	for i := range b.env.Members {
		m := &b.env.Members[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if !b.ownsClusters() && !b.env.Runner.Note("check that context %s of %s answers (%s creates nothing)", m.Context, m.Kubeconfig, b.prov.Name()) {
				return // a dry run: the provider runs no commands to print, and would read the kubeconfig
			}
			cl, err := b.prov.Create(ctx, m.Cluster)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.Name, err)
				return
			}
			mu.Lock()
			m.Kubeconfig, m.Context = cl.Kubeconfig, cl.Context
			mu.Unlock()
		}()
		if b.opts.DryRun {
			wg.Wait()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
