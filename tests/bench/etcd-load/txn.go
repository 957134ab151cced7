package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"time"

	"go.etcd.io/etcd/clientv3"
)

// --op txn, as tsbench --op txn builds it: value(k) = V for 4 distinct
// random keys, then a put of V to 4 other distinct random keys (etcd refuses
// a Txn that puts one key twice), nothing in the else branch. Over a
// keyspace that --op preload filled with V, the compares hold.
const (
	txnCompares = 4
	txnPuts     = 4
	preloadOps  = 128 // puts per preload Txn: etcd's default --max-txn-ops
)

func distinctKeys(rng *rand.Rand, n int, keys uint64, keySize int) []string {
	out := make([]string, 0, n)
	for len(out) < n {
		k := keyOf(uint64(rng.Int63n(int64(keys))), keySize)
		dup := false
		for _, o := range out {
			dup = dup || o == k
		}
		if !dup {
			out = append(out, k)
		}
	}
	return out
}

// doTxn sends one transaction; elseBranch: it was answered, but a compare failed.
func doTxn(ctx context.Context, kv clientv3.KV, rng *rand.Rand, keys uint64, keySize int, value string) (bool, error) {
	cmps := make([]clientv3.Cmp, 0, txnCompares)
	for _, k := range distinctKeys(rng, txnCompares, keys, keySize) {
		cmps = append(cmps, clientv3.Compare(clientv3.Value(k), "=", value))
	}
	ops := make([]clientv3.Op, 0, txnPuts)
	for _, k := range distinctKeys(rng, txnPuts, keys, keySize) {
		ops = append(ops, clientv3.OpPut(k, value))
	}
	resp, err := kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return !resp.Succeeded, nil
}

// runPreload writes value to every key of the keyspace, preloadOps keys a
// Txn, one Txn at a time (a retry rewrites the same values). Prints
// {"op": "preload", keys, transactions, seconds}; returns the exit code.
func runPreload(kv clientv3.KV, keys uint64, keySize int, value string) int {
	start := time.Now()
	txns := 0
	for first := uint64(0); first < keys; first += preloadOps {
		ops := make([]clientv3.Op, 0, preloadOps)
		for i := first; i < keys && i < first+preloadOps; i++ {
			ops = append(ops, clientv3.OpPut(keyOf(i, keySize), value))
		}
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = kv.Txn(ctx).Then(ops...).Commit()
			cancel()
			if err == nil {
				break
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "etcd-load: preload: the Txn of keys %d.. failed 5 times: %v\n", first, err)
			return 1
		}
		txns++
	}
	printJSON(map[string]interface{}{"op": "preload", "keys": keys, "key_size": keySize, "value_size": len(value),
		"transactions": txns, "seconds": round3(time.Since(start).Seconds())})
	return 0
}
