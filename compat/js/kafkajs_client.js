'use strict'
// kafkajs as a kbroker compat client, driven by compat/matrix_proc_test.go
// (the commands are described there). Codecs: gzip is built in, snappy
// comes from kafkajs-snappy, lz4 from lz4js (pure JavaScript, LZ4 frames as
// Kafka uses them) through kafkajs's codec interface; zstd would need the
// native @kafkajs/zstd and is not tested.
const { Kafka, CompressionTypes, CompressionCodecs, Partitioners, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4js = require('lz4js')
const readline = require('readline')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  async compress (encoder) { return Buffer.from(lz4js.compress(encoder.buffer)) },
  async decompress (buffer) { return Buffer.from(lz4js.decompress(buffer)) }
})

const TIMEOUT_MS = 60000
const RETENTION_MS = '3600000'
const codecs = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4
}

function fail (msg) {
  const err = new Error('kafkajs: ' + msg)
  err.fatal = true
  throw err
}

function client (addr) {
  return new Kafka({
    clientId: 'kbroker-compat',
    brokers: [addr],
    logLevel: logLevel.WARN,
    connectionTimeout: 10000,
    requestTimeout: TIMEOUT_MS,
    retry: { retries: 5 }
  })
}

async function admin (addr, topic) {
  const adm = client(addr).admin()
  await adm.connect()
  try {
    const created = await adm.createTopics({
      waitForLeaders: true,
      timeout: TIMEOUT_MS,
      topics: [{ topic, numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: RETENTION_MS }] }]
    })
    if (!created) fail('createTopics: topic already existed')
    const topics = await adm.listTopics()
    if (!topics.includes(topic)) fail('listTopics lacks ' + topic)
    const md = await adm.fetchTopicMetadata({ topics: [topic] })
    if (md.topics[0].partitions.length !== 2) fail('fetchTopicMetadata: ' + JSON.stringify(md))
    const cfg = await adm.describeConfigs({ includeSynonyms: false, resources: [{ type: 2 /* TOPIC */, name: topic }] })
    const entry = cfg.resources[0].configEntries.find(e => e.configName === 'retention.ms')
    if (!entry || entry.configValue !== RETENTION_MS) fail('describeConfigs retention.ms: ' + JSON.stringify(entry))
    await adm.listGroups()
    await adm.fetchTopicOffsets(topic)
    await adm.deleteTopics({ topics: [topic], timeout: TIMEOUT_MS })
    if ((await adm.listTopics()).includes(topic)) fail('listTopics still has ' + topic + ' after deleteTopics')
  } finally {
    await adm.disconnect()
  }
}

async function create (addr, topic, partitions, rf = '1') {
  const adm = client(addr).admin()
  await adm.connect()
  try {
    await adm.createTopics({ waitForLeaders: true, timeout: TIMEOUT_MS, topics: [{ topic, numPartitions: Number(partitions), replicationFactor: Number(rf) }] })
  } finally {
    await adm.disconnect()
  }
}

async function readStdin () {
  const recs = []
  const rl = readline.createInterface({ input: process.stdin })
  for await (const line of rl) {
    if (line.trim() !== '') recs.push(JSON.parse(line))
  }
  return recs
}

async function produce (addr, topic, codec, idempotent) {
  if (!(codec in codecs)) fail('unsupported codec ' + codec)
  const recs = await readStdin()
  // A leader's SIGKILL (the cluster matrix) is noticed by the controller
  // only when the broker's ZooKeeper session expires: the client's default
  // five retries (about 5.6 s) do not always outlast it, so this producer
  // retries as long as a user expecting failover would configure; an
  // idempotent one without a limit, as kafkajs asks of it.
  const producer = client(addr).producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    idempotent: idempotent === '1',
    maxInFlightRequests: idempotent === '1' ? 1 : undefined,
    retry: { retries: idempotent === '1' ? Number.MAX_SAFE_INTEGER : 30, maxRetryTime: 2000 }
  })
  await producer.connect()
  try {
    const messages = toMessages(recs)
    const res = await producer.send({ topic, acks: -1, timeout: TIMEOUT_MS, compression: codecs[codec], messages })
    await printAcks(addr, topic, recs, res)
  } finally {
    await producer.disconnect()
  }
}

// toMessages turns stdin records into kafkajs messages.
function toMessages (recs) {
  return recs.map(r => ({
    key: r.k,
    value: r.v,
    headers: Object.fromEntries(r.h.map(([k, v]) => [k, v]))
  }))
}

// printAcks prints {"k","p","o"} for every record of one send. kafkajs
// reports one base offset per partition; messages for one partition keep
// their order, so offsets follow from it. The default partitioner (murmur2
// of the key, as Java's) placed each message; the same function says where.
async function printAcks (addr, topic, recs, res) {
  const base = {}
  for (const r of res) base[r.partition] = BigInt(r.baseOffset)
  const partitioner = Partitioners.DefaultPartitioner()
  const partitionMetadata = await describePartitions(addr, topic)
  for (const r of recs) {
    const p = partitioner({ topic, partitionMetadata, message: { key: r.k } })
    const o = base[p]
    if (o === undefined) fail(`no acknowledgement for partition ${p} of key ${r.k}`)
    base[p] = o + 1n
    console.log(JSON.stringify({ k: r.k, p, o: Number(o) }))
  }
}

// transact runs the transactions read from stdin, one JSON object a line:
// {"commit": bool, "offset": N, "recs": [{"k","v","h"}...]}, with one
// transactional producer: send the records, sendOffsets {OFFTOPIC
// partition 0: N} for GROUP when N >= 0, then commit or abort.
async function transact (addr, topic, txnId, group, offTopic) {
  const txns = await readStdin()
  const producer = client(addr).producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    transactionalId: txnId,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { retries: Number.MAX_SAFE_INTEGER, maxRetryTime: 2000 }
  })
  await producer.connect()
  try {
    for (const spec of txns) {
      const txn = await producer.transaction()
      try {
        const res = await txn.send({ topic, acks: -1, timeout: TIMEOUT_MS, messages: toMessages(spec.recs) })
        await printAcks(addr, topic, spec.recs, res)
        if (spec.offset >= 0) {
          await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic: offTopic, partitions: [{ partition: 0, offset: String(spec.offset) }] }] })
        }
      } catch (e) {
        await txn.abort().catch(() => {})
        throw e
      }
      if (spec.commit) await txn.commit()
      else await txn.abort()
    }
  } finally {
    await producer.disconnect()
  }
}

// transform is a consume-transform-produce loop that runs until killed or
// sent SIGTERM: a consumer in GROUP (read_committed) on IN, a producer with
// transactional id TXNID; each batch is copied to OUT in one transaction
// together with its offsets (sendOffsets). After each commit it prints
// {"committed": records so far}. With PAUSE_AFTER > 0, the first batch
// after that many records is left in an open transaction (records sent,
// offsets added): it prints {"open": records in it} and waits to be killed.
async function transform (addr, inTopic, outTopic, group, txnId, pauseAfter) {
  pauseAfter = Number(pauseAfter || 0)
  const kafka = client(addr)
  const newProducer = async () => {
    const p = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      transactionalId: txnId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 30000,
      retry: { retries: Number.MAX_SAFE_INTEGER, maxRetryTime: 2000 }
    })
    // Connecting runs InitProducerId: an earlier producer with this
    // transactional id is fenced and its open transaction aborted.
    await p.connect()
    return p
  }
  let producer = await newProducer()
  const consumer = kafka.consumer({
    groupId: group,
    readUncommitted: false,
    maxWaitTimeInMs: 200,
    maxBytesPerPartition: 1024, // small batches: many transactions
    sessionTimeout: 6000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    retry: { retries: 20, maxRetryTime: 2000 }
  })
  let committed = 0
  let finish
  const stopped = new Promise((resolve, reject) => { finish = { resolve, reject } })
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    console.error(`kafkajs: consumer crashed (restart: ${payload.restart}): ${payload.error && payload.error.message}`)
    if (!payload.restart) finish.reject(new Error('kafkajs: consumer crashed for good: ' + (payload.error && payload.error.stack)))
  })
  await consumer.connect()
  await consumer.subscribe({ topic: inTopic, fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (batch.messages.length === 0) return
      const txn = await producer.transaction()
      try {
        await txn.send({
          topic: outTopic,
          acks: -1,
          timeout: TIMEOUT_MS,
          messages: batch.messages.map(m => ({ key: m.key, value: m.value }))
        })
        const next = (BigInt(batch.lastOffset()) + 1n).toString()
        await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }] })
        if (pauseAfter > 0 && committed >= pauseAfter) {
          console.log(JSON.stringify({ open: batch.messages.length }))
          await new Promise(() => {}) // until SIGKILL
        }
        await txn.commit()
      } catch (e) {
        console.error(`kafkajs: transaction on ${batch.topic}[${batch.partition}] failed, the batch will be read again: ${e.message}`)
        if (txn.isActive()) {
          await txn.abort().catch(err => console.error('kafkajs: abort: ' + err.message))
        }
        if (txn.isActive() || !(await producerReady(producer))) {
          // The outcome is unknown (commit or abort did not get an
          // answer): a new producer's InitProducerId finishes it.
          await producer.disconnect().catch(() => {})
          producer = await newProducer()
        }
        // Retriable: kafkajs runs eachBatch again, or restarts the
        // consumer from the committed offsets (a non-retriable error, such
        // as the coordinator lookup failing while the broker restarts,
        // would stop the consumer for good).
        const again = new Error('transaction failed: ' + e.message)
        again.retriable = true
        throw again
      }
      for (const m of batch.messages) resolveOffset(m.offset)
      committed += batch.messages.length
      console.log(JSON.stringify({ committed }))
      await heartbeat()
    }
  })
  process.on('SIGTERM', () => {
    consumer.disconnect().then(() => producer.disconnect()).then(finish.resolve, finish.reject)
  })
  await stopped
}

// producerReady reports whether a transactional producer can begin a new
// transaction (kafkajs leaves it unusable when EndTxn failed).
async function producerReady (producer) {
  try {
    const txn = await producer.transaction()
    await txn.abort() // nothing was sent: no request
    return true
  } catch (e) {
    return false
  }
}

async function describePartitions (addr, topic) {
  const adm = client(addr).admin()
  await adm.connect()
  try {
    const md = await adm.fetchTopicMetadata({ topics: [topic] })
    return md.topics[0].partitions
  } finally {
    await adm.disconnect()
  }
}

async function consume (addr, topic, group, instance, n, isolation) {
  if (instance) fail('kafkajs has no group.instance.id')
  if (isolation && isolation !== 'read_committed' && isolation !== 'read_uncommitted') fail('unknown isolation ' + isolation)
  n = Number(n)
  const consumer = client(addr).consumer({
    groupId: group,
    maxWaitTimeInMs: 200,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    // kafkajs reads committed by default (readUncommitted: false).
    readUncommitted: isolation === 'read_uncommitted'
  })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let got = 0
  let resolveDone
  const done = new Promise(resolve => { resolveDone = resolve })
  const timer = setTimeout(() => resolveDone(new Error(`consumed ${got} of ${n} records before the deadline`)), TIMEOUT_MS)
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic: t, partition, message }) => {
      got++
      const h = Object.entries(message.headers || {}).map(([k, v]) => [k, v.toString()])
      console.log(JSON.stringify({ p: partition, o: Number(message.offset), k: message.key.toString(), v: message.value.toString(), h }))
      await consumer.commitOffsets([{ topic: t, partition, offset: (BigInt(message.offset) + 1n).toString() }])
      if (got >= n) resolveDone(null)
    }
  })
  const err = await done
  clearTimeout(timer)
  await consumer.disconnect()
  if (err) throw err
}

async function main () {
  const [cmd, ...args] = process.argv.slice(2)
  switch (cmd) {
    case 'version': console.log(require('kafkajs/package.json').version); break
    case 'admin': await admin(...args); break
    case 'create': await create(...args); break
    case 'produce': await produce(...args); break
    case 'consume': await consume(...args); break
    case 'transact': await transact(...args); break
    case 'transform': await transform(...args); break
    default: fail('unknown command ' + cmd)
  }
}

main().then(() => process.exit(0), err => {
  console.error(err.fatal ? err.message : err.stack || err)
  process.exit(1)
})
