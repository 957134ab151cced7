package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/etcdserver/api/v3rpc/rpctypes"
)

// --op lease, as tsbench --op lease: --leases grants of --lease-ttl, paced
// over one keepalive period P = TTL/3, each followed by a put of one key
// ("l0..0<i>") with its lease; then every lease kept alive until the window
// (--warmup after the last key is attached, then --duration) is over.
//
// --keepalive stream (the default, what bench-vs-etcd.sh runs): clientv3's
// KeepAlive, the way etcd clients keep leases: one bidirectional stream per
// client (--connections of them, leases spread over them), one message each
// way per keepalive, sent TTL/3 after the lease's last answer (the client
// checks every 500 ms, so every P to P + 0.5 s). That is the counterpart of
// tsbench's one request per keepalive on persistent connections; with
// --keepalive once, KeepAliveOnce opens a gRPC stream for every keepalive,
// a cost tsnode does not pay. The stream hides each keepalive's latency and
// failures: a lease whose channel closes before the end is lost.
// --keepalive once: KeepAliveOnce on tsbench's grid (lease i at i/N of P
// after the start, then every P: evenly spread; at most --in-flight at
// once), with latencies and failures.
//
// --lease-to-leader (the default): the lease clients connect to the leader
// only, as tsbench's do; a follower would forward each keepalive to the
// leader over its peer HTTP, work tsnode's clients never cause.
//
// At both edges of the window the leader's raft index (Status of every
// endpoint) gives the raft entries of the window; after it, Leases() says
// how many leases are still alive. The leases are left to expire.
type leaseOptions struct {
	clients          []*clientv3.Client // the connections the leases use
	status           *clientv3.Client   // for Status and Leases (balanced over every endpoint)
	endpoints        []string
	toLeader         bool
	leases           int
	ttl              int64
	stream           bool
	inFlight         int
	keySize          int
	value            string
	warmup, duration float64
}

type leaseRun struct {
	mu                     sync.Mutex
	windowSet              bool
	windowStart, windowEnd time.Time
	keepalives, failures   uint64
	lost, setupErrors      uint64
	firstErr               string
	latencies              []time.Duration
}

func (r *leaseRun) inWindow(t time.Time) bool {
	return r.windowSet && !t.Before(r.windowStart) && !t.After(r.windowEnd)
}

func (r *leaseRun) ack(now time.Time, latency time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inWindow(now) {
		r.keepalives++
		if latency > 0 {
			r.latencies = append(r.latencies, latency)
		}
	}
}

func (r *leaseRun) fail(now time.Time, err error, lost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inWindow(now) {
		r.failures++
	} else if !r.windowSet {
		r.setupErrors++
	}
	if lost {
		r.lost++
	}
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
}

// retry calls f until it succeeds or ctx ends, 10 ms apart.
func retry(ctx context.Context, run *leaseRun, f func(context.Context) error) error {
	for {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f(c)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		run.fail(time.Now(), err, false)
		time.Sleep(10 * time.Millisecond)
	}
}

// leaderRaftIndex: the raft index of the member that says it leads.
func leaderRaftIndex(c *clientv3.Client, eps []string) (uint64, string, bool) {
	for _, ep := range eps {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := c.Status(ctx, ep)
		cancel()
		if err == nil && s.Leader == s.Header.MemberId {
			return s.RaftIndex, ep, true
		}
	}
	return 0, "", false
}

func unixMs(t time.Time) float64 { return float64(t.UnixNano()) / 1e6 }

func runLeases(o leaseOptions) int {
	period := time.Duration(o.ttl) * time.Second / 3
	run := &leaseRun{}
	ctx, stop := context.WithCancel(context.Background()) // ends every keepalive
	defer stop()
	ids := make([]clientv3.LeaseID, o.leases)
	sem := make(chan struct{}, o.inFlight)
	var setup sync.WaitGroup
	start := time.Now()
	setupDone := make(chan struct{})
	go func() {
		for i := 0; i < o.leases; i++ {
			planned := start.Add(period * time.Duration(i) / time.Duration(o.leases))
			time.Sleep(time.Until(planned))
			sem <- struct{}{}
			setup.Add(1)
			go func(i int) {
				defer setup.Done()
				cl := o.clients[i%len(o.clients)]
				err := retry(ctx, run, func(c context.Context) error {
					g, err := cl.Grant(c, o.ttl)
					if err == nil {
						ids[i] = g.ID
					}
					return err
				})
				if err == nil {
					key := "l" + keyOf(uint64(i), o.keySize)[1:]
					err = retry(ctx, run, func(c context.Context) error {
						_, err := cl.Put(c, key, o.value, clientv3.WithLease(ids[i]))
						return err
					})
				}
				<-sem
				if err != nil {
					return
				}
				if o.stream {
					keepStream(ctx, run, cl, ids[i])
				} else {
					go keepOnce(ctx, run, cl, ids[i], planned, period, sem)
				}
			}(i)
		}
		setup.Wait()
		close(setupDone)
	}()
	select {
	case <-setupDone:
	case <-time.After(maxDuration(time.Minute, 10*period)):
		fmt.Fprintf(os.Stderr, "etcd-load: --op lease: setup did not finish\n")
		return 1
	}
	setupEnd := time.Now()
	run.mu.Lock()
	run.windowStart = setupEnd.Add(time.Duration(o.warmup * float64(time.Second)))
	run.windowEnd = run.windowStart.Add(time.Duration(o.duration * float64(time.Second)))
	run.windowSet = true
	windowStart, windowEnd := run.windowStart, run.windowEnd
	run.mu.Unlock()

	time.Sleep(time.Until(windowStart))
	t1 := time.Now()
	idx1, leader, ok1 := leaderRaftIndex(o.status, o.endpoints)
	time.Sleep(time.Until(windowEnd))
	t2 := time.Now()
	idx2, leader2, ok2 := leaderRaftIndex(o.status, o.endpoints)
	alive := int64(-1)
	{
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if l, err := o.status.Leases(c); err == nil {
			live := make(map[clientv3.LeaseID]bool, len(l.Leases))
			for _, s := range l.Leases {
				live[s.ID] = true
			}
			alive = 0
			for _, id := range ids {
				if id != 0 && live[id] {
					alive++
				}
			}
		}
		cancel()
	}
	stop()
	if o.toLeader {
		for _, c := range o.clients {
			c.Close()
		}
	}

	run.mu.Lock()
	defer run.mu.Unlock()
	sort.Slice(run.latencies, func(i, j int) bool { return run.latencies[i] < run.latencies[j] })
	method := "stream: clientv3 KeepAlive, one stream per connection"
	if !o.stream {
		method = "once: KeepAliveOnce, a gRPC stream per keepalive"
	}
	perSec := float64(run.keepalives) / o.duration
	out := map[string]interface{}{
		"op": "lease", "leader": leader, "connections": len(o.clients), "in_flight": o.inFlight,
		"leases": o.leases, "lease_ttl_s": o.ttl, "keepalive_every_s": round3(period.Seconds()),
		"keepalive": method, "to_leader": o.toLeader, "key_size": o.keySize, "value_size": len(o.value),
		"setup_s": round3(setupEnd.Sub(start).Seconds()), "setup_errors": run.setupErrors,
		"duration_s": o.duration, "warmup_s": o.warmup,
		"ops": run.keepalives, "ops_per_sec": round3(perSec),
		"keepalives": run.keepalives, "keepalives_per_sec": round3(perSec),
		"p50_ms": round3(percentile(run.latencies, 50)), "p99_ms": round3(percentile(run.latencies, 99)),
		"p999_ms": round3(percentile(run.latencies, 99.9)), "max_ms": round3(percentile(run.latencies, 100)),
		"errors": run.failures, "leases_lost": run.lost, "leases_alive_at_end": alive,
		"window_start_unix_ms": round3(unixMs(t1)), "window_end_unix_ms": round3(unixMs(t2)),
		"first_error": run.firstErr,
	}
	if ok1 && ok2 && leader != leader2 {
		out["leader_changed"] = true // the raft entries of the window are not known
	} else if ok1 && ok2 && t2.After(t1) {
		out["window_slots"] = idx2 - idx1
		out["decrees_per_sec"] = round3(float64(idx2-idx1) / t2.Sub(t1).Seconds())
	}
	printJSON(out)
	if run.keepalives == 0 {
		fmt.Fprintf(os.Stderr, "etcd-load: no keepalive succeeded in the window (first error: %q)\n", run.firstErr)
		return 1
	}
	return 0
}

// keepStream keeps id alive with clientv3's keepalive stream, counting each
// answer; a channel that closes before ctx ends lost its lease.
func keepStream(ctx context.Context, run *leaseRun, cl *clientv3.Client, id clientv3.LeaseID) {
	ch, err := cl.KeepAlive(ctx, id)
	if err != nil {
		run.fail(time.Now(), err, true)
		return
	}
	go func() {
		for range ch {
			run.ack(time.Now(), 0)
		}
		if ctx.Err() == nil {
			run.fail(time.Now(), fmt.Errorf("lease %x: keepalive channel closed", int64(id)), true)
		}
	}()
}

// keepOnce sends KeepAliveOnce for id at planned + k period (the first
// point after now, at once if that is past), and then at the next point of
// the grid after the previous one was sent; at most cap(sem) at once.
func keepOnce(ctx context.Context, run *leaseRun, cl *clientv3.Client, id clientv3.LeaseID, planned time.Time,
	period time.Duration, sem chan struct{}) {
	next := planned.Add(period)
	if now := time.Now(); next.Before(now) {
		next = now
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		sem <- struct{}{}
		sent := time.Now()
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cl.KeepAliveOnce(c, id)
		cancel()
		<-sem
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			lost := err == rpctypes.ErrLeaseNotFound
			run.fail(now, err, lost)
			if lost {
				return
			}
			next = now.Add(10 * time.Millisecond)
			continue
		}
		run.ack(now, now.Sub(sent))
		next = planned.Add(period * (sent.Sub(planned)/period + 1))
	}
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}
