package testbed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/polykube/polykube/testbed/provider"
)

// Fault names something the test bed can break and repair.
type Fault string

// The faults. Each stop returns once the fault is in effect, each start once it is repaired.
// What each is, what it needs and how the CLI explains it is its row in FaultKinds.
const (
	FaultAPIServer Fault = "apiserver"
	FaultOperator  Fault = "operator"
	FaultFlux      Fault = "flux"
	FaultGit       Fault = "git"
	FaultNetwork   Fault = "network"
)

// FaultKind is one row of the fault table: what the test bed, its CLI and the scenario
// harness know of a fault. Only how a bed injects it is not here: that is the bed's Injectors.
type FaultKind struct {
	Fault Fault
	// PerCluster says the fault is one cluster's (the CLI takes a CLUSTER); otherwise it is
	// the federation's and the cluster is ignored.
	PerCluster bool
	// Needs is the provider capability the fault needs, "" when every provider can have it. A
	// bed refuses the fault on a provider without it, naming the providers that have it.
	Needs provider.Capability
	// Does says what the fault does, for a refusal ("it drops …").
	Does string
	// What names the component the fault stops, in messages; %s is the cluster of a
	// per-cluster fault.
	What string
	// Help is the CLI's help for the fault, its lines as the help prints them after the name.
	Help []string
}

// FaultKinds is the fault table, in the order the CLI lists them. A new fault kind is a row
// here, an injector in each bed whose providers can have it (TestFaultKinds_EveryBedInjects
// fails without it), its step phrase and its feature.
var FaultKinds = []FaultKind{
	{
		Fault: FaultAPIServer, PerCluster: true, Needs: provider.CapabilityStopStart,
		Does: "it stops and starts a cluster's control plane, its state kept",
		What: "the API server of cluster %q",
		Help: []string{
			"the cluster's control plane, its state kept. kwok: its API server",
			"process; kind (and k0s in Docker): docker stop of its node containers,",
			"so everything in the cluster stops; k0s hosts: sudo k0s stop over SSH.",
			"start waits for the API server (and on kind and k0s the operator)",
		},
	},
	{
		Fault: FaultOperator, PerCluster: true,
		What: "the operator of cluster %q",
		Help: []string{
			"the cluster's operator. kwok: its process (stop kills it); kind and",
			"k0s: its Deployment scaled to 0 with Flux told to leave it so, its pods",
			"killed; start gives it its replicas back and hands it to Flux",
		},
	},
	{
		Fault: FaultFlux, PerCluster: true,
		What: "the Flux controllers of cluster %q",
		Help: []string{
			"the cluster's Flux controllers (source- and kustomize-controller).",
			"kwok and existing: their processes (with delivery argocd: its Argo CD",
			"controllers; refused with argocd-central, whose one Argo CD delivers to",
			"every cluster); kind and k0s: their Deployments scaled to 0;",
			"start gives them their replicas back",
		},
	},
	{
		Fault: FaultGit,
		What:  "the Git server",
		Help:  []string{"the federation's Git server"},
	},
	{
		Fault: FaultNetwork, PerCluster: true, Needs: provider.CapabilityPartition,
		Does: "it drops the traffic between a cluster's nodes and the other clusters' nodes",
		What: "the network between cluster %q and the other clusters",
		Help: []string{
			"a network partition: every packet between the cluster's node",
			"containers and every other cluster's is dropped (iptables in the",
			"nodes), both ways; the host still reaches every API server, each side",
			"keeps serving its own endpoints",
		},
	},
}

// Faults lists every fault, in the table's order.
var Faults = func() []Fault {
	out := make([]Fault, len(FaultKinds))
	for i, k := range FaultKinds {
		out[i] = k.Fault
	}
	return out
}()

// KindOf is the table's row of a fault; the error of an unknown one names those it knows.
func KindOf(f Fault) (FaultKind, error) {
	for _, k := range FaultKinds {
		if k.Fault == f {
			return k, nil
		}
	}
	return FaultKind{}, UnknownFault(f)
}

// Target names what the fault stops in cluster, for messages ("the operator of cluster
// "alpha"").
func (k FaultKind) Target(cluster string) string {
	if k.PerCluster {
		return fmt.Sprintf(k.What, cluster)
	}
	return k.What
}

// Supported says whether a run of the provider can have the fault: nil, or an error wrapping
// provider.ErrNotSupported that names the providers that can.
func (k FaultKind) Supported(providerName string) error {
	if k.Needs == "" {
		return nil
	}
	if caps, _ := BedCapabilities(providerName); slices.Contains(caps, k.Needs) {
		return nil
	}
	can := k.Providers()
	if len(can) == 0 {
		return fmt.Errorf("fault %s is not supported on provider %s: %s, which needs a provider with the %s capability, and this program registers none: %w",
			k.Fault, providerName, k.Does, k.Needs, provider.ErrNotSupported)
	}
	flags := make([]string, len(can))
	for i, name := range can {
		flags[i] = "--provider " + name
	}
	return fmt.Errorf("fault %s is not supported on provider %s: %s, which only %s can do (the %s capability): bring the federation up with %s: %w",
		k.Fault, providerName, k.Does, strings.Join(can, ", "), k.Needs, strings.Join(flags, " or "), provider.ErrNotSupported)
}

// Providers are the registered providers a run of which can have the fault, sorted.
func (k FaultKind) Providers() []string {
	var can []string
	for _, name := range provider.Names() {
		if caps, _ := BedCapabilities(name); k.Needs == "" || slices.Contains(caps, k.Needs) {
			can = append(can, name)
		}
	}
	return can
}

// Injector puts one fault in effect on a bed of type B (Stop) and ends it (Start), for a
// cluster the table has checked (or "" for a fault that is not per cluster).
type Injector[B any] struct {
	Stop, Start func(b B, ctx context.Context, cluster string) error
}

// Injectors are a bed's injectors, one per fault its providers can have.
type Injectors[B any] map[Fault]Injector[B]

// FaultRun is what the table checks a fault against before a bed injects it: the run's
// provider, and how the bed checks that a cluster is the federation's.
type FaultRun struct {
	Provider string
	Cluster  func(name string) error
}

// Inject checks the fault against the table (known, supported by the provider, given a
// cluster that is the federation's when it is per cluster), then stops it (stop) or starts it
// with the bed's injector.
func (in Injectors[B]) Inject(ctx context.Context, b B, run FaultRun, stop bool, f Fault, cluster string) error {
	k, err := KindOf(f)
	if err != nil {
		return err
	}
	if err := k.Supported(run.Provider); err != nil {
		return err
	}
	if k.PerCluster {
		if cluster == "" {
			return fmt.Errorf("the %s fault needs a cluster: name one of the federation's clusters", f)
		}
		if err := run.Cluster(cluster); err != nil {
			return err
		}
	}
	inj, ok := in[f]
	if !ok {
		// TestFaultKinds_EveryBedInjects keeps this from happening for a registered bed.
		return fmt.Errorf("fault %s is not supported on provider %s: its bed has no injector for it (a test-bed bug: add one): %w", f, run.Provider, provider.ErrNotSupported)
	}
	if stop {
		return inj.Stop(b, ctx, cluster)
	}
	return inj.Start(b, ctx, cluster)
}

// Faults are the faults the injectors inject, in the table's order.
func (in Injectors[B]) Faults() []Fault {
	var out []Fault
	for _, f := range Faults {
		if _, ok := in[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

var (
	injectedMu sync.Mutex
	injected   = map[provider.Placement][]Fault{}
)

// RegisterInjectors records the faults the bed registered for placement injects (its
// Injectors.Faults()), for CheckInjectors.
func RegisterInjectors(placement provider.Placement, faults []Fault) {
	injectedMu.Lock()
	defer injectedMu.Unlock()
	injected[placement] = faults
}

// CheckInjectors checks the registered beds against the table: every bed has an injector
// for every fault that a provider it runs can have, and none for a fault that is not in the
// table or that none of its providers can have.
func CheckInjectors() error {
	injectedMu.Lock()
	defer injectedMu.Unlock()
	var errs []error
	for placement, faults := range injected {
		needed := map[Fault]bool{}
		for _, name := range provider.Names() {
			reg, err := provider.Lookup(name)
			if err != nil || !slices.Contains(reg.Placements, placement) {
				continue
			}
			for _, k := range FaultKinds {
				if k.Needs == "" || slices.Contains(reg.Capabilities, k.Needs) {
					if !needed[k.Fault] && !slices.Contains(faults, k.Fault) {
						errs = append(errs, fmt.Errorf("the %s bed has no injector for fault %s, which its provider %s can have", placement, k.Fault, name))
					}
					needed[k.Fault] = true
				}
			}
		}
		for _, f := range faults {
			if !needed[f] {
				errs = append(errs, fmt.Errorf("the %s bed injects fault %s, which none of its providers can have (or the table lacks)", placement, f))
			}
		}
	}
	if len(injected) == 0 {
		errs = append(errs, errors.New("no bed registered its injectors"))
	}
	return errors.Join(errs...)
}

// UnknownFault is the error for a fault the test bed does not know, naming those it does.
func UnknownFault(f Fault) error {
	names := make([]string, len(Faults))
	for i, f := range Faults {
		names[i] = string(f)
	}
	return fmt.Errorf("unknown fault %q: use one of %s", f, strings.Join(names, ", "))
}
