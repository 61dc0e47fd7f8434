package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync/atomic"
	"testing"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/bench"
)

// BenchmarkReqChannel measures REQ by channel over WebSocket, the generic
// client's read (issue 15: 2,000 a second at the head and deep on 2
// cores): `{"kinds":[9],"#h":[ch],"limit":50}` at the head, and with until
// at a random window page's cursor, from 8 connections, each sending its
// next REQ once the last one's EOSE arrived. Answers are read whole, not
// decoded.
func BenchmarkReqChannel(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s, channel, events := benchCommunity(b, false)
	chain, err := bench.WalkWindow(context.Background(), bench.Target{WS: s.wsURL, HTTP: s.httpURL}, channel, 50, 1000)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("channel of %d events", events)
	for _, depth := range []string{"head", "deep"} {
		b.Run(depth, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			reqs := make([][]byte, b.N)
			for i := range reqs {
				f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Limit: 50}
				if c := chain.Cursors[rng.IntN(len(chain.Cursors))]; depth == "deep" && c != nil {
					until := nostr.Timestamp(c.CreatedAt)
					f.Until = &until
				}
				fj, _ := json.Marshal(f)
				reqs[i] = fmt.Appendf(nil, `["REQ","r%d",%s]`, i, fj)
			}
			b.ResetTimer()
			benchREQs(b, s.wsURL, reqs)
		})
	}
}

// BenchmarkReqThread measures REQ by `#e` over WebSocket, a thread fetched
// the generic way (issue 32: at least strfry's rate):
// `{"#e":[root],"limit":500}` for a random root with replies of the loaded
// channel, from 8 connections as BenchmarkReqChannel sends them. A
// generated thread answers about 3 events.
func BenchmarkReqThread(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s, channel, events := benchCommunity(b, false)
	chain, err := bench.WalkWindow(context.Background(), bench.Target{WS: s.wsURL, HTTP: s.httpURL}, channel, 50, 1000)
	if err != nil {
		b.Fatal(err)
	}
	if len(chain.Threads) == 0 {
		b.Fatal("no thread to read")
	}
	b.Logf("channel of %d events, %d roots with replies", events, len(chain.Threads))
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([][]byte, b.N)
	for i := range reqs {
		fj, _ := json.Marshal(nostr.Filter{Tags: nostr.TagMap{"e": {chain.Threads[rng.IntN(len(chain.Threads))]}}, Limit: 500})
		reqs[i] = fmt.Appendf(nil, `["REQ","r%d",%s]`, i, fj)
	}
	b.ResetTimer()
	benchREQs(b, s.wsURL, reqs)
}

// benchREQs sends reqs (the i-th with subscription id r<i>) from 8
// connections, each its next once the last one's EOSE arrived, and reports
// REQs a second and events an answer. Answers are read whole, not decoded.
func benchREQs(b *testing.B, wsURL string, reqs [][]byte) {
	var next, received atomic.Int64
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		for pb.Next() {
			i := next.Add(1) - 1
			if err := conn.WriteMessage(websocket.TextMessage, reqs[i]); err != nil {
				b.Error(err)
				return
			}
			for {
				_, msg, err := conn.ReadMessage()
				if err != nil {
					b.Error(err)
					return
				}
				if bytes.HasPrefix(msg, []byte(`["EOSE"`)) {
					break
				}
				received.Add(1)
			}
			if err := conn.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `["CLOSE","r%d"]`, i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reqs/s")
	b.ReportMetric(float64(received.Load())/float64(b.N), "events/req")
}
