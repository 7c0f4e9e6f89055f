package scenarios

import (
	"context"
	"strconv"
	"time"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// soakSteps: the seeded random walk of faults and edits (features/soak.feature, make soak).
func soakSteps(r *registry) {
	r.step(`^the fleet soaks for (\d+) minutes? of random faults and edits with seed (\d+)$`, step2(func(s *harness.Scenario, ctx context.Context, minutes, seed string) error {
		m, err := strconv.Atoi(minutes)
		if err != nil {
			return err
		}
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			return err
		}
		return s.Soak(ctx, time.Duration(m)*time.Minute, n)
	}))
	r.step(`^no invariant of the soak was violated$`, step0(func(s *harness.Scenario, ctx context.Context) error { return s.CheckSoakClean() }))
}
