'use strict'
// kafkajs as one member of a consumer group that churns, driven by
// compat/rebalance_proc_test.go:
//
//   member ADDR TOPIC GROUP
//
// consumes TOPIC in GROUP (6 s session, 500 ms heartbeats) until SIGTERM,
// then leaves the group (disconnect sends LeaveGroup) and exits 0. For every
// record it prints {"e":"d","p","o","k"}; after each batch it commits the
// batch synchronously (commitOffsets) and, if that succeeded, prints
// {"e":"c","p","o"} (o: the committed next offset). A failed commit is
// reported on stderr only: its records may be delivered again.
const { Kafka, logLevel } = require('kafkajs')

function out (obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

async function member (addr, topic, group) {
  const kafka = new Kafka({
    clientId: 'rb-kafkajs',
    brokers: [addr],
    logLevel: logLevel.ERROR,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 30 }
  })
  const consumer = kafka.consumer({
    groupId: group,
    maxWaitTimeInMs: 100,
    sessionTimeout: 6000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 30 }
  })
  let finish
  const stopped = new Promise((resolve, reject) => { finish = { resolve, reject } })
  // kafkajs stops a consumer for good on an error it does not retry, as
  // when the broker is killed while a FindCoordinator is in flight
  // (ECONNRESET: kafkajs retries only ECONNREFUSED there). An application
  // runs it again, as this member does, a few times at most.
  let restarts = 0
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    console.error(`kafkajs: consumer crashed (restart: ${payload.restart}): ${payload.error && payload.error.message}`)
    if (payload.restart) return
    if (++restarts > 3) {
      finish.reject(new Error('kafkajs: consumer crashed for good: ' + (payload.error && payload.error.stack)))
      return
    }
    setTimeout(() => {
      consumer.connect().then(() => consumer.run(runConfig)).catch(finish.reject)
    }, 500)
  })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const runConfig = {
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, isRunning, isStale }) => {
      let last = null
      for (const m of batch.messages) {
        if (!isRunning() || isStale()) break
        out({ e: 'd', p: batch.partition, o: Number(m.offset), k: m.key.toString() })
        last = m.offset
      }
      if (last === null) return
      const next = (BigInt(last) + 1n).toString()
      try {
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }])
      } catch (e) {
        console.error(`kafkajs: commit of ${batch.topic}[${batch.partition}]@${next} failed: ${e.message}`)
        throw e // the batch is fetched again from the committed offset
      }
      out({ e: 'c', p: batch.partition, o: Number(next) })
      resolveOffset(last)
    }
  }
  await consumer.run(runConfig)
  process.on('SIGTERM', () => {
    consumer.disconnect().then(finish.resolve, finish.reject)
  })
  await stopped
}

async function main () {
  const [cmd, ...args] = process.argv.slice(2)
  if (cmd !== 'member') throw new Error('kafkajs: unknown command ' + cmd)
  await member(...args)
}

main().then(() => process.exit(0), err => {
  console.error(err.stack || err)
  process.exit(1)
})
