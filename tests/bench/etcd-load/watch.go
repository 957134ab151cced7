// etcd-load --op watch: the same load as tsbench --op watch
// (node/tsbench/watch_load.cc). --watchers watches of the prefix "w" from
// the current revision, spread over the --connections clients (each balancing
// over the endpoints as clientv3 does; clientv3 carries a client's watches on
// one gRPC stream), then --in-flight goroutines put, closed loop, keys of the
// prefix drawn from --keys, each value "<number>" padded to --value-size. A
// put's answer time is kept by its number; each event a watcher receives
// inside the window is one delivery, with its latency from the put's answer
// (0 when the event came first: counted apart). A watch that ends (clientv3
// closes its channel, e.g. compacted or canceled) is counted lost.
package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
)

type watchOptions struct {
	clients          []*clientv3.Client
	watchers         int
	inFlight         int
	keys             uint64
	keySize          int
	valueSize        int
	warmup, duration float64
	seed             int64
	endpoints        string
}

func watchKeyOf(i uint64, size int) string { return "w" + keyOf(i, size)[1:] }

func runWatches(o watchOptions) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Put numbers to answer times (ns since t0; 0: not answered yet).
	const maxPuts = 1 << 24
	answered := make([]int64, maxPuts)
	var nextPut int64
	t0 := time.Now()

	var lost int64
	type sample struct {
		lat        []time.Duration
		before     uint64
		deliveries uint64
	}
	samples := make([]sample, o.watchers)
	var ready sync.WaitGroup
	var done sync.WaitGroup
	var windowStart, windowEnd time.Time
	var windowSet int32
	for w := 0; w < o.watchers; w++ {
		ready.Add(1)
		done.Add(1)
		go func(w int) {
			defer done.Done()
			c := o.clients[w%len(o.clients)]
			ch := c.Watch(clientv3.WithRequireLeader(ctx), "w", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
			first := true
			s := &samples[w]
			for resp := range ch {
				if first {
					first = false
					ready.Done()
					if resp.Created {
						continue
					}
				}
				if err := resp.Err(); err != nil {
					break
				}
				now := time.Now()
				if atomic.LoadInt32(&windowSet) == 0 || now.Before(windowStart) || !now.Before(windowEnd) {
					continue
				}
				for _, ev := range resp.Events {
					n, err := strconv.ParseInt(strings.TrimRight(string(ev.Kv.Value), " "), 10, 64)
					if err != nil || n < 0 || n >= maxPuts {
						continue
					}
					s.deliveries++
					at := atomic.LoadInt64(&answered[n])
					if at == 0 {
						s.before++
						s.lat = append(s.lat, 0)
					} else {
						s.lat = append(s.lat, now.Sub(t0.Add(time.Duration(at))))
					}
				}
			}
			if first {
				ready.Done()
			}
			if ctx.Err() == nil {
				atomic.AddInt64(&lost, 1)
			}
		}(w)
	}
	ready.Wait()
	windowStart = time.Now().Add(time.Duration(o.warmup * float64(time.Second)))
	windowEnd = windowStart.Add(time.Duration(o.duration * float64(time.Second)))
	atomic.StoreInt32(&windowSet, 1)

	var puts, errors uint64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	putCtx, putCancel := context.WithDeadline(context.Background(), windowEnd.Add(abandonAfter))
	defer putCancel()
	for g := 0; g < o.inFlight; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			kv := o.clients[g%len(o.clients)].KV
			rng := rand.New(rand.NewSource(o.seed*1000003 + int64(g) + 1))
			for time.Now().Before(windowEnd) {
				n := atomic.AddInt64(&nextPut, 1) - 1
				if n >= maxPuts {
					return
				}
				v := strconv.FormatInt(n, 10)
				if len(v) < o.valueSize {
					v += strings.Repeat(" ", o.valueSize-len(v))
				}
				_, err := kv.Put(putCtx, watchKeyOf(uint64(rng.Int63n(int64(o.keys))), o.keySize), v)
				now := time.Now()
				if err != nil {
					if putCtx.Err() != nil {
						return
					}
					atomic.AddUint64(&errors, 1)
					firstErr.CompareAndSwap(nil, err.Error())
					time.Sleep(10 * time.Millisecond)
					continue
				}
				atomic.StoreInt64(&answered[n], int64(now.Sub(t0))|1)
				if !now.Before(windowStart) && now.Before(windowEnd) {
					atomic.AddUint64(&puts, 1)
				}
			}
		}(g)
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // the window's last deliveries
	cancel()
	done.Wait()

	var all []time.Duration
	var before, deliveries uint64
	for i := range samples {
		all = append(all, samples[i].lat...)
		before += samples[i].before
		deliveries += samples[i].deliveries
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	maxMs := 0.0
	if len(all) > 0 {
		maxMs = float64(all[len(all)-1].Nanoseconds()) / 1e6
	}
	fe, _ := firstErr.Load().(string)
	printJSON(map[string]interface{}{
		"op":                      "watch",
		"watchers":                o.watchers,
		"in_flight":               o.inFlight,
		"connections":             len(o.clients),
		"duration_s":              o.duration,
		"value_size":              o.valueSize,
		"ops":                     puts,
		"ops_per_sec":             round3(float64(puts) / o.duration),
		"deliveries":              deliveries,
		"deliveries_per_sec":      round3(float64(deliveries) / o.duration),
		"delivered_before_answer": before,
		"p50_ms":                  round3(percentile(all, 50)),
		"p99_ms":                  round3(percentile(all, 99)),
		"p999_ms":                 round3(percentile(all, 99.9)),
		"max_ms":                  round3(maxMs),
		"errors":                  errors,
		"streams_lost":            lost,
		"first_error":             fe,
		"endpoints":               o.endpoints,
	})
	if puts == 0 || deliveries == 0 {
		fmt.Fprintf(os.Stderr, "etcd-load: no put or no delivery counted (errors %d, first: %q)\n", errors, fe)
		return 1
	}
	return 0
}
