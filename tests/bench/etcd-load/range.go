// --op range: the keyspace read back as tsbench --op range reads it.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"go.etcd.io/etcd/clientv3"
)

// Entries per page of --op range, as tsbench's kRangeBenchPage.
const rangePage = 1000

// runRange reads every key of the keyspace (the prefix "k" of keyOf) in
// linearizable Gets of rangePage keys, values included, one at a time, the
// next page starting just past the last key of the one before. It prints
// tsbench --op range's JSON; exit 0, or 1 if a page failed or it read fewer
// than `keys` keys.
func runRange(kv clientv3.KV, keys uint64) int {
	const prefix, end = "k", "l"
	from := prefix
	var read, bytes uint64
	var pages []float64
	start := time.Now()
	for {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(rangePage))
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "etcd-load: range: page %d failed: %v\n", len(pages)+1, err)
			return 1
		}
		pages = append(pages, float64(time.Since(sent).Nanoseconds())/1e6)
		for _, e := range resp.Kvs {
			bytes += uint64(len(e.Key) + len(e.Value))
		}
		read += uint64(len(resp.Kvs))
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	seconds := time.Since(start).Seconds()
	sort.Float64s(pages)
	pct := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(pages)))) - 1
		if i < 0 {
			i = 0
		}
		return round3(pages[i])
	}
	printJSON(map[string]interface{}{"op": "range", "keys": read, "bytes": bytes, "pages": len(pages),
		"page_entries": rangePage, "seconds": round3(seconds), "keys_per_sec": round3(float64(read) / seconds),
		"p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": round3(pages[len(pages)-1])})
	if read < keys {
		fmt.Fprintf(os.Stderr, "etcd-load: range: read %d keys, the keyspace holds %d (preload it first)\n", read, keys)
		return 1
	}
	return 0
}
