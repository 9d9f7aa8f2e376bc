// Preloaded into Tally by bench/heap-promoted.ts (`node --import`): V8's sampling heap profiler
// through the in-process inspector, started on SIGUSR1 and written to HEAP_SAMPLES_FILE on SIGUSR2.
// It keeps the samples of objects still alive or collected by a major collection, and drops those
// that died young: what is left is what outlived the young generation. HEAP_SAMPLES_ALL=1 keeps
// every sample: all that was allocated.
import fs from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  );

process.on('SIGUSR1', async () => {
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.HEAP_SAMPLES_ALL === '1',
  });
});
process.on('SIGUSR2', async () => {
  const { profile } = await post('HeapProfiler.stopSampling');
  fs.writeFileSync(`${process.env.HEAP_SAMPLES_FILE}.part`, JSON.stringify(profile));
  fs.renameSync(`${process.env.HEAP_SAMPLES_FILE}.part`, process.env.HEAP_SAMPLES_FILE); // whole when it appears
});
