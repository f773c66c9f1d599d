package broker

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn serves one client connection. A reader goroutine decodes frames into
// a bounded queue; serve handles them one at a time and writes responses, so
// responses leave in request order even when the client pipelines.
type conn struct {
	b    *Broker
	nc   net.Conn
	addr string
	// listener is the listener the connection came in on.
	listener config.Listener
	// principal is who the client is: "User:<name>" after SASL
	// authentication (sasl_conn.go), anonymousPrincipal otherwise.
	principal string

	stopOnce sync.Once
	// gone is closed when the connection should stop: shutdown or peer closed.
	gone chan struct{}
}

// queued is one decoded request, or the error that ended the read loop.
type queued struct {
	req protocol.Request
	err error
}

// maxPipelined bounds how many decoded requests wait per connection.
const maxPipelined = 32

func newConn(b *Broker, nc net.Conn) *conn {
	return &conn{b: b, nc: nc, addr: nc.RemoteAddr().String(), principal: anonymousPrincipal, gone: make(chan struct{})}
}

// stopReading makes the read loop end at the next frame boundary; requests
// already read are still answered.
func (c *conn) stopReading() {
	_ = c.nc.SetReadDeadline(time.Now())
}

// shutdownWriteGrace bounds how long answers to in-flight requests may take
// to reach a client at shutdown, so a client that stopped reading cannot hold
// the broker up.
var shutdownWriteGrace = 5 * time.Second

// stopForShutdown stops reading and gives pending writes shutdownWriteGrace.
func (c *conn) stopForShutdown() {
	c.stopReading()
	_ = c.nc.SetWriteDeadline(time.Now().Add(shutdownWriteGrace))
}

func (c *conn) serve() {
	defer c.nc.Close()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	w := bufio.NewWriterSize(c.nc, 64<<10)
	if c.listener.SecurityProtocol == config.ProtoSASLPlaintext && !c.authenticate(r, w) {
		return
	}
	q := make(chan queued, maxPipelined)
	done := make(chan struct{})
	go c.readLoop(r, q, done)
	defer func() {
		close(done)
		// Unblock and drain the reader so it exits.
		_ = c.nc.SetReadDeadline(time.Now())
		for range q {
		}
	}()

	var buf []byte
	for item := range q {
		if item.err != nil {
			c.logReadError(item.err)
			_ = w.Flush()
			return
		}
		if item.req.Body == nil && item.req.Header.APIKey != int16(kmsg.ApiVersions) {
			// Kafka closes the connection on an unsupported version of any API
			// but ApiVersions, which is answered so the client can retry lower.
			c.b.log.Warn("closing connection: unsupported api version", "client", c.addr,
				"api", kmsg.NameForKey(item.req.Header.APIKey), "version", item.req.Header.APIVersion)
			_ = w.Flush()
			return
		}
		ctx := &reqCtx{hdr: item.req.Header, conn: c}
		resp := c.handle(ctx, item.req)
		if resp != nil {
			buf = protocol.AppendResponse(buf[:0], item.req.Header.CorrelationID, resp)
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
		if ctx.closeConn {
			_ = w.Flush()
			return
		}
		if len(q) == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
	_ = w.Flush()
}

func (c *conn) readLoop(r *bufio.Reader, q chan<- queued, done <-chan struct{}) {
	defer close(q)
	for {
		frame, err := protocol.ReadFrame(r, c.b.cfg.SocketRequestMaxBytes, nil)
		var item queued
		if err != nil {
			item.err = err
		} else {
			item.req, item.err = protocol.ParseRequest(frame)
		}
		select {
		case q <- item:
		case <-done:
			return
		}
		if item.err != nil {
			return
		}
	}
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
		return // peer closed or shutdown: nothing to say
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.b.log.Warn("closing connection: truncated frame", "client", c.addr, "err", err)
	default:
		c.b.log.Warn("closing connection: bad request", "client", c.addr, "err", err)
	}
}

// reqCtx is what a handler knows about the request beyond its body.
type reqCtx struct {
	hdr  protocol.RequestHeader
	conn *conn
	// closeConn is set by a handler that cannot answer: the connection is
	// closed after this request, as Kafka does on an unanswerable request.
	closeConn bool
}

// handle answers one request; a nil response means none is sent (acks=0).
func (c *conn) handle(ctx *reqCtx, req protocol.Request) kmsg.Response {
	if req.Body == nil {
		return c.b.apiVersionsUnsupported()
	}
	switch r := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		return c.b.handleApiVersions(ctx, r)
	case *kmsg.MetadataRequest:
		return c.b.handleMetadata(ctx, r)
	case *kmsg.ProduceRequest:
		return c.b.handleProduce(ctx, r)
	case *kmsg.FetchRequest:
		return c.b.handleFetch(ctx, r)
	case *kmsg.ListOffsetsRequest:
		return c.b.handleListOffsets(ctx, r)
	case *kmsg.CreateTopicsRequest:
		return c.b.handleCreateTopics(ctx, r)
	case *kmsg.DeleteTopicsRequest:
		return c.b.handleDeleteTopics(ctx, r)
	case *kmsg.InitProducerIDRequest:
		return c.b.handleInitProducerID(ctx, r)
	case *kmsg.DescribeConfigsRequest:
		return c.b.handleDescribeConfigs(ctx, r)
	case *kmsg.DescribeClusterRequest:
		return c.b.handleDescribeCluster(ctx, r)
	case *kmsg.DeleteRecordsRequest:
		return c.b.handleDeleteRecords(ctx, r)
	case *kmsg.OffsetForLeaderEpochRequest:
		return c.b.handleOffsetForLeaderEpoch(ctx, r)
	case *kmsg.AlterConfigsRequest:
		return c.b.handleAlterConfigs(ctx, r)
	case *kmsg.DescribeLogDirsRequest:
		return c.b.handleDescribeLogDirs(ctx, r)
	case *kmsg.CreatePartitionsRequest:
		return c.b.handleCreatePartitions(ctx, r)
	case *kmsg.ElectLeadersRequest:
		return c.b.handleElectLeaders(ctx, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.b.handleIncrementalAlterConfigs(ctx, r)
	case *kmsg.DescribeTopicPartitionsRequest:
		return c.b.handleDescribeTopicPartitions(ctx, r)
	case *kmsg.FindCoordinatorRequest:
		return c.b.handleFindCoordinator(ctx, r)
	case *kmsg.OffsetCommitRequest:
		return c.b.handleOffsetCommit(ctx, r)
	case *kmsg.OffsetFetchRequest:
		return c.b.handleOffsetFetch(ctx, r)
	case *kmsg.TxnOffsetCommitRequest:
		return c.b.handleTxnOffsetCommit(ctx, r)
	case *kmsg.AddPartitionsToTxnRequest, *kmsg.AddOffsetsToTxnRequest, *kmsg.EndTxnRequest,
		*kmsg.DescribeTransactionsRequest, *kmsg.ListTransactionsRequest:
		return c.b.handleTxnRequest(ctx, r)
	case *kmsg.DescribeProducersRequest:
		return c.b.handleDescribeProducers(ctx, r)
	case *kmsg.ListGroupsRequest:
		return c.b.handleListGroupsWithShare(ctx, r) // share_groups.go: adds share groups
	case *kmsg.DeleteGroupsRequest:
		return c.b.handleDeleteGroupsWithShare(ctx, r) // share_groups.go: deletes share groups
	case *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest, *kmsg.HeartbeatRequest, *kmsg.LeaveGroupRequest,
		*kmsg.DescribeGroupsRequest, *kmsg.OffsetDeleteRequest,
		*kmsg.ConsumerGroupHeartbeatRequest, *kmsg.ConsumerGroupDescribeRequest:
		return c.b.handleGroupRequest(ctx, r)
	// KIP-932 share groups (share_*.go).
	case *kmsg.ShareGroupHeartbeatRequest:
		return c.b.handleShareGroupHeartbeat(ctx, r)
	case *kmsg.ShareGroupDescribeRequest:
		return c.b.handleShareGroupDescribe(ctx, r)
	case *kmsg.ShareFetchRequest:
		return c.b.handleShareFetch(ctx, r)
	case *kmsg.ShareAcknowledgeRequest:
		return c.b.handleShareAcknowledge(ctx, r)
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return c.b.handleDescribeShareGroupOffsets(ctx, r)
	case *kmsg.AlterShareGroupOffsetsRequest:
		return c.b.handleAlterShareGroupOffsets(ctx, r)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return c.b.handleDeleteShareGroupOffsets(ctx, r)
	// SASL (sasl_conn.go) and SCRAM credentials.
	case *kmsg.SASLHandshakeRequest:
		return c.b.handleSASLHandshake(ctx, r)
	case *kmsg.SASLAuthenticateRequest:
		return c.b.handleSASLAuthenticate(ctx, r)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return c.b.handleDescribeUserSCRAMCredentials(ctx, r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return c.b.handleAlterUserSCRAMCredentials(ctx, r)
	}
	c.b.log.Error("no handler for supported api", "api", kmsg.NameForKey(req.Header.APIKey))
	return nil
}
