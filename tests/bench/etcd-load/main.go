// etcd-load: a closed-loop load generator for an etcd cluster with the
// semantics of tsbench (node/tsbench/tsbench_main.cc), so that
// cluster-scripts/bench-vs-etcd.sh can put both side by side.
//
//	etcd-load --endpoints 127.0.0.1:2379,... [--connections C] [--in-flight N]
//	          [--key-size 16] [--value-size 100] [--keys 100000]
//	          [--op put|get|mixed|txn|lease|watch|preload|range] [--duration S] [--warmup S] [--seed X]
//	          [--leases N] [--lease-ttl S] [--keepalive stream|once] [--watchers N]
//
// --connections clientv3 clients are opened (each its own gRPC connection,
// balancing over all endpoints as clientv3 does); --in-flight goroutines,
// spread evenly over them, each run a closed loop: issue one request, wait
// for its answer, issue the next. Keys are drawn uniformly from --keys keys,
// each exactly --key-size bytes, "k000...0<i>" as tsbench makes them; puts
// write one random printable value of --value-size bytes. get is a
// linearizable Get (clientv3's default); an absent key counts as answered
// (not_found), as in tsbench. mixed: half puts, half gets, chosen at random.
// txn: each request a Txn of 4 compares value(k) = V and 4 puts of V
// (txn.go), V the value preload writes; preload writes V to every key and
// exits. lease: many leases kept alive (leases.go). watch: watchers of a
// prefix while puts of it run (watch.go). range: the keyspace read back in
// pages of 1,000 (range.go).
// The first --warmup seconds are not counted; only requests that complete
// inside the --duration window that follows count (throughput = those ops
// divided by --duration; latency percentiles by nearest rank over them).
// Requests still unanswered 5 s after the window are abandoned.
//
// Prints one JSON object on stdout with tsbench --json's field names
// (ops_per_sec, p50_ms, p99_ms, p999_ms, errors, in_flight, connections,
// duration_s, value_size, op, ...). Exit codes: 0 ran and some requests
// succeeded; 1 none succeeded; 2 bad arguments; 3 could not connect.
//
// Build (no Go modules needed; etcd's sources from golang-etcd-server-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o etcd-load .
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"
)

const abandonAfter = 5 * time.Second

type result struct {
	ops       uint64
	notFound  uint64
	txnElse   uint64 // --op txn: answered, but the compares failed (the else branch ran)
	errors    uint64
	abandoned uint64 // still unanswered when the run ended
	firstErr  string
	latencies []time.Duration
}

// keyOf returns key i of the keyspace, exactly size bytes, as tsbench's KeyOf.
func keyOf(i uint64, size int) string {
	digits := strconv.FormatUint(i, 10)
	pad := size - len(digits)
	if pad <= 0 {
		return digits
	}
	return "k" + strings.Repeat("0", pad-1) + digits
}

// percentile by nearest rank (0 < q <= 100) of sorted latencies, in ms.
func percentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q/100*float64(len(sorted)) + 0.999999999)
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return float64(sorted[rank-1].Nanoseconds()) / 1e6
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func bad(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "etcd-load: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	endpoints := flag.String("endpoints", "", "etcd client endpoints host:port,... (required)")
	connections := flag.Int("connections", 1, "clientv3 clients (gRPC connections)")
	inFlight := flag.Int("in-flight", 1, "requests in flight in total, spread evenly over the connections")
	keySize := flag.Int("key-size", 16, "key size (bytes)")
	valueSize := flag.Int("value-size", 100, "value size (bytes) of puts")
	keys := flag.Uint64("keys", 100000, "keyspace: keys are drawn uniformly from this many")
	op := flag.String("op", "put", "put, get (linearizable; absent keys count as answered), mixed (half each), "+
		"txn (4 value compares and 4 puts, as tsbench --op txn), lease (as tsbench --op lease) or "+
		"preload (write the value to every key, 128 a Txn, then exit) or range (read every key back in "+
		"linearizable pages of 1,000, then exit)")
	leases := flag.Int("leases", 10000, "--op lease: leases to grant and keep alive")
	watchers := flag.Int("watchers", 1000, "--op watch: watches of the prefix the puts write (watch.go)")
	leaseTTL := flag.Int64("lease-ttl", 9, "--op lease: the leases' TTL in seconds (keepalives every TTL/3)")
	keepalive := flag.String("keepalive", "stream", "--op lease: stream (clientv3's KeepAlive: one stream per "+
		"connection, each lease renewed TTL/3 after its last answer, checked every 500 ms) or once "+
		"(KeepAliveOnce every TTL/3 exactly: a gRPC stream opened per keepalive)")
	leaseToLeader := flag.Bool("lease-to-leader", true, "--op lease: connect to the leader only, as tsbench "+
		"does (false: balance over --endpoints, and a follower forwards each keepalive to the leader)")
	duration := flag.Float64("duration", 10, "measured seconds (after the warm-up)")
	warmup := flag.Float64("warmup", 1, "seconds of load before measuring (not counted)")
	seed := flag.Int64("seed", 1, "seed of the key and value choice")
	flag.Parse()
	if flag.NArg() != 0 {
		bad("unexpected argument %q", flag.Arg(0))
	}
	if *endpoints == "" {
		bad("--endpoints is required")
	}
	if *connections < 1 || *inFlight < 1 || *keySize < 1 || *valueSize < 0 || *keys < 1 {
		bad("--connections, --in-flight, --key-size and --keys must be >= 1, --value-size >= 0")
	}
	switch *op {
	case "put", "get", "mixed", "txn", "lease", "watch", "preload", "range":
	default:
		bad("--op must be put, get, mixed, txn, lease, watch, preload or range, not %q", *op)
	}
	if *watchers < 1 || *watchers > 100000 {
		bad("--watchers must be 1..100000")
	}
	if *op == "txn" && *keys < txnPuts {
		bad("--op txn draws %d distinct keys a transaction: --keys %d is too few", txnPuts, *keys)
	}
	if *leases < 1 || *leases > 100000 || *leaseTTL < 2 || *leaseTTL > 86400 {
		bad("--leases must be 1..100000 and --lease-ttl 2..86400 seconds")
	}
	if *keepalive != "stream" && *keepalive != "once" {
		bad("--keepalive must be stream or once, not %q", *keepalive)
	}
	if *op == "lease" && len(strconv.Itoa(*leases-1))+1 > *keySize {
		bad("--key-size %d cannot hold %d lease keys", *keySize, *leases)
	}
	if *duration <= 0 || *warmup < 0 {
		bad("--duration must be > 0 and --warmup >= 0")
	}
	if len(strconv.FormatUint(*keys-1, 10)) > *keySize {
		bad("--key-size %d cannot hold %d distinct keys", *keySize, *keys)
	}
	if *connections > *inFlight && *op != "watch" {
		*connections = *inFlight // a connection without a request would only idle
	}

	// gRPC's and clientv3's own logs would mix into ours; errors are counted instead.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(discard{}, discard{}, os.Stderr))
	eps := strings.Split(*endpoints, ",")
	quiet := zap.NewProductionConfig()
	quiet.Level = zap.NewAtomicLevelAt(zap.FatalLevel)
	dial := func(eps []string) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   eps,
			DialTimeout: 5 * time.Second,
			LogConfig:   &quiet,
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "etcd-load: cannot connect to %s: %v\n", strings.Join(eps, ","), err)
			os.Exit(3)
		}
		return c
	}
	clients := make([]*clientv3.Client, *connections)
	for i := range clients {
		clients[i] = dial(eps)
	}
	// Wait until the cluster answers (one linearizable read), so the warm-up
	// does not start against a cluster that is not serving yet.
	{
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := clients[0].Get(ctx, "etcd-load-probe")
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "etcd-load: the cluster at %s does not answer: %v\n", *endpoints, err)
			os.Exit(3)
		}
	}

	valueRng := rand.New(rand.NewSource(*seed))
	valueBytes := make([]byte, *valueSize)
	for i := range valueBytes {
		valueBytes[i] = byte(33 + valueRng.Intn(94))
	}
	value := string(valueBytes)

	switch *op {
	case "preload":
		os.Exit(runPreload(clients[0].KV, *keys, *keySize, value))
	case "range":
		os.Exit(runRange(clients[0].KV, *keys))
	case "watch":
		os.Exit(runWatches(watchOptions{clients: clients, watchers: *watchers, inFlight: *inFlight, keys: *keys,
			keySize: *keySize, valueSize: *valueSize, warmup: *warmup, duration: *duration, seed: *seed,
			endpoints: *endpoints}))
	case "lease":
		leaseClients := clients
		if *leaseToLeader {
			_, leader, ok := leaderRaftIndex(clients[0], eps)
			if !ok {
				fmt.Fprintf(os.Stderr, "etcd-load: no member of %s says it leads\n", *endpoints)
				os.Exit(3)
			}
			leaseClients = make([]*clientv3.Client, len(clients))
			for i := range leaseClients {
				leaseClients[i] = dial([]string{leader})
			}
		}
		os.Exit(runLeases(leaseOptions{clients: leaseClients, status: clients[0], endpoints: eps, leases: *leases,
			ttl: *leaseTTL, toLeader: *leaseToLeader,
			stream: *keepalive == "stream", inFlight: *inFlight, keySize: *keySize, value: value,
			warmup: *warmup, duration: *duration}))
	}

	t0 := time.Now()
	windowStart := t0.Add(time.Duration(*warmup * float64(time.Second)))
	windowEnd := windowStart.Add(time.Duration(*duration * float64(time.Second)))
	// Requests still out this long after the window are abandoned.
	ctx, cancel := context.WithDeadline(context.Background(), windowEnd.Add(abandonAfter))
	defer cancel()

	results := make([]result, *inFlight)
	var wg sync.WaitGroup
	for g := 0; g < *inFlight; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			kv := clients[g%len(clients)].KV
			rng := rand.New(rand.NewSource(*seed*1000003 + int64(g) + 1))
			r := &results[g]
			for {
				start := time.Now()
				if !start.Before(windowEnd) {
					return
				}
				key := keyOf(uint64(rng.Int63n(int64(*keys))), *keySize)
				get := *op == "get" || (*op == "mixed" && rng.Intn(2) == 1)
				var err error
				notFound, elseBranch := false, false
				if *op == "txn" {
					elseBranch, err = doTxn(ctx, kv, rng, *keys, *keySize, value)
				} else if get {
					var resp *clientv3.GetResponse
					resp, err = kv.Get(ctx, key)
					if err == nil && len(resp.Kvs) == 0 {
						notFound = true
					}
				} else {
					_, err = kv.Put(ctx, key, value)
				}
				now := time.Now()
				counted := !now.Before(windowStart) && !now.After(windowEnd)
				if err != nil {
					if ctx.Err() != nil {
						r.abandoned++
						return
					}
					if counted {
						r.errors++
						if r.firstErr == "" {
							r.firstErr = err.Error()
						}
					}
					time.Sleep(10 * time.Millisecond) // do not spin on a failing cluster
					continue
				}
				if counted {
					r.ops++
					if notFound {
						r.notFound++
					}
					if elseBranch {
						r.txnElse++
					}
					r.latencies = append(r.latencies, now.Sub(start))
				}
			}
		}(g)
	}
	wg.Wait()
	for _, c := range clients {
		c.Close()
	}

	var total result
	for i := range results {
		r := &results[i]
		total.ops += r.ops
		total.notFound += r.notFound
		total.txnElse += r.txnElse
		total.errors += r.errors
		total.abandoned += r.abandoned
		if total.firstErr == "" {
			total.firstErr = r.firstErr
		}
		total.latencies = append(total.latencies, r.latencies...)
	}
	sort.Slice(total.latencies, func(i, j int) bool { return total.latencies[i] < total.latencies[j] })
	var sum time.Duration
	for _, l := range total.latencies {
		sum += l
	}
	mean, max := 0.0, 0.0
	if n := len(total.latencies); n > 0 {
		mean = float64(sum.Nanoseconds()) / float64(n) / 1e6
		max = float64(total.latencies[n-1].Nanoseconds()) / 1e6
	}
	out := map[string]interface{}{
		"ops":         total.ops,
		"ops_per_sec": round3(float64(total.ops) / *duration),
		"p50_ms":      round3(percentile(total.latencies, 50)),
		"p99_ms":      round3(percentile(total.latencies, 99)),
		"p999_ms":     round3(percentile(total.latencies, 99.9)),
		"mean_ms":     round3(mean),
		"max_ms":      round3(max),
		"errors":      total.errors,
		"first_error": total.firstErr,
		"not_found":   total.notFound,
		"abandoned":   total.abandoned,
		"in_flight":   *inFlight,
		"connections": len(clients),
		"duration_s":  *duration,
		"warmup_s":    *warmup,
		"value_size":  *valueSize,
		"key_size":    *keySize,
		"keys":        *keys,
		"op":          *op,
		"endpoints":   *endpoints,
	}
	if *op == "txn" {
		out["txn_compares"] = txnCompares
		out["txn_puts"] = txnPuts
		out["txn_else"] = total.txnElse
	}
	printJSON(out)
	if total.ops == 0 {
		fmt.Fprintf(os.Stderr, "etcd-load: no request succeeded (errors %d, first: %q; %d abandoned unanswered)\n",
			total.errors, total.firstErr, total.abandoned)
		os.Exit(1)
	}
}

// printJSON prints one JSON object on a line of stdout (exit 1 if it cannot).
func printJSON(out map[string]interface{}) {
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
