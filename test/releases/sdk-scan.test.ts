import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import { LIVE_CHANGES } from '../../src/releases/live.ts'
import { prepareScan, scanFiles, scannerFor, scanSdk } from '../../src/releases/sdk-scan.ts'

const find = (code: string, from = '1.0.0', to = '7.0.0'): Array<[number, number, string]> =>
  scannerFor(from, to)
    .scanText(code, 'x.cpp')
    .map((f) => [f.line, f.column, f.rule])

describe('svcops scan sdk', () => {
  // One case per catalog change the scanner handles: code that uses the old form.
  const uses: Record<string, string> = {
    '2.0.0/aligned-frame': 'AlignedData::DataFrame frame;',
    '2.0.0/aligned-data-namespace': 'using namespace AlignedData;',
    '2.0.0/compressed-video-format': 'AlignedData::CompressedVideoFormat f;',
    '2.0.0/pixel-format-in-struct': 'auto p = AlignedData::PixelFormat::kNV12;',
    '2.0.0/audio-sample-row': 'AlignedData::AudioSampleRow row;',
    '2.0.0/mpts': 'int64_t t = frame->mPTS;',
    '2.0.0/device-memory': 'void* p = frame->mVideoDataCudaPtr;',
    '4.0.0/incoming-request': 'settings.mCallback = [](const IncomingRequest& r) {};',
    '4.0.0/debug-video-audio': 'settings.mDebugAudio = true;',
    '5.0.0/media-receiver-start': 'bool ok = MediaReceiver::start(settings);',
    '5.0.0/aligned-frame-free-stream': 'MediaReceiver::Settings settings{};',
    '5.0.0/media-streamer-configure': 'void MediaStreamer::configure(const Settings& s) {}',
    '5.0.0/factory-ca-cert': 'PipelineSystemControllerInterfaceFactory factory(url, name);',
    '6.0.0/pixel-format-top-level': 'AlignedFrame::PixelFormat fmt = AlignedFrame::PixelFormat::kUYVY;',
    '6.0.0/send-message': 'auto reply = iface->sendRequest(msg, timeout);',
    '7.0.0/sdk-interfaces': 'std::unique_ptr<ControlDataReceiver> receiver;',
    '7.0.0/get-version': 'log(getBuildInfo());',
    '7.0.0/reset-callback': 'MediaReceiver::Settings settings{};',
    '7.0.0/start-receiver-settings': 'bool ok = MediaReceiver::start(settings);',
  }

  it('has a case for every catalog change the scanner handles', () => {
    expect(
      LIVE_CHANGES.filter((c) => c.effect?.type === 'sdk-symbol' || c.effect?.type === 'custom-ca-cert')
        .map((c) => c.id)
        .sort(),
    ).toEqual(Object.keys(uses).sort())
  })

  it.each(Object.entries(uses))('finds %s', (rule, code) => {
    const release = rule.split('/')[0] ?? ''
    const before = `${Number(release.split('.')[0]) - 1}.0.0`
    expect(find(code, before, release).map((f) => f[2])).toContain(rule)
    expect(find(code, release, '7.9.0').map((f) => f[2])).not.toContain(rule)
  })

  it.each([
    ['a line comment', '// AlignedData::DataFrame was used here; call sendRequest() later'],
    ['a block comment', '/* frame->mPTS\n   MediaStreamer::configure */ int x;'],
    ['a line comment continued with a backslash', '// old: \\\n mPTS = 0;'],
    ['a string literal', 'log("mPTS is gone, use mCaptureTimestamp; sendRequest(\\"x\\")");'],
    ['a raw string', 'auto s = R"sql(select mPTS, "sendRequest" from t)sql";'],
    ['a raw string with a )" inside', 'auto s = R"x( ")" mDebugVideo )x";'],
    ['a char literal next to a digit separator', "int n = 1'000'000; char c = 'm'; // mPTS"],
    ['escaped quotes in char literals', "char q = '\\''; char d = '\"'; // mPTS \"sendRequest\""],
    ['an include of a header with an old name', '#include <AlignedData.h>\n#include "AlignedData.h"'],
    [
      'similarly named symbols',
      'int mPTSOffset; void sendRequestAsync(); struct AlignedDataFrame {}; int my_mPTS; MediaStreamerConfig c; getBuildInfoString();',
    ],
    ['a member of an unrelated class', 'Foo::start(); Foo::configure(); Settings s;'],
    ['7.0 names that stay valid', 'const ControlDataReceiver::Settings& receiverSettings = {};'],
  ])('ignores %s', (_name, code) => {
    expect(find(code)).toEqual([])
  })

  it('finds a use right after a literal that ends in an escaped backslash', () => {
    expect(find('const char* p = "C:\\\\"; char b = \'\\\\\'; auto t = f.mPTS;')).toEqual([[1, 51, '2.0.0/mpts']])
  })

  it('reports line and column of each use, after comments and strings on the same line', () => {
    const code = [
      '#include <vector>',
      '/* mPTS */ auto t = f.mPTS; // mPTS',
      '  const char* s = "sendRequest"; iface.sendRequest(m);',
    ].join('\n')
    expect(find(code)).toEqual([
      [2, 23, '2.0.0/mpts'],
      [3, 40, '6.0.0/send-message'],
    ])
  })

  it('reports both changes in a qualified name that holds two', () => {
    expect(find('void on(const ControlDataReceiver::IncomingRequest& r);', '3.0.0', '7.0.0')).toEqual([
      [1, 15, '7.0.0/sdk-interfaces'],
      [1, 36, '4.0.0/incoming-request'],
    ])
  })

  it('scans a tree of C++ files, skipping other files and .git', () => {
    const root = mkdtempSync(join(tmpdir(), 'svcops-sdk-'))
    try {
      mkdirSync(join(root, 'src', 'engine'), { recursive: true })
      mkdirSync(join(root, '.git'))
      writeFileSync(join(root, 'src', 'engine', 'render.cpp'), 'void f(AlignedFrame& f) {\n  auto t = f.mPTS;\n}\n')
      writeFileSync(join(root, 'src', 'engine', 'render.h'), '#pragma once\nstruct X { PixelFormat p; };\n')
      writeFileSync(join(root, 'src', 'notes.md'), 'mPTS\n')
      writeFileSync(join(root, '.git', 'x.cpp'), 'mPTS;\n')
      const result = scanSdk(root, '1.0.0', '7.0.0')
      expect(result.files).toBe(2)
      expect(result.bytes).toBe(
        Buffer.byteLength('void f(AlignedFrame& f) {\n  auto t = f.mPTS;\n}\n#pragma once\nstruct X { PixelFormat p; };\n'),
      )
      expect(result.findings).toEqual([
        expect.objectContaining({ file: join('src', 'engine', 'render.cpp'), line: 2, column: 14, symbol: 'mPTS', release: '2.0.0' }),
      ])
      expect(() => scanSdk(join(root, 'nope'), '1.0.0', '7.0.0')).toThrow(BadInputError)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('reads files larger than its read buffer whole, and names a file it cannot read', () => {
    const root = mkdtempSync(join(tmpdir(), 'svcops-sdk-'))
    try {
      // 3 MB of ordinary code, then a use on the last line: found only if the whole file was read.
      const filler = '  int value = compute(frame, options);\n'.repeat(Math.ceil((3 << 20) / 39))
      const lines = filler.split('\n').length - 1
      writeFileSync(join(root, 'big.cpp'), `${filler}  auto t = frame->mPTS;\n`)
      const result = scanSdk(`${root}/`, '1.0.0', '7.0.0')
      expect(result.bytes).toBe(filler.length + '  auto t = frame->mPTS;\n'.length)
      expect(result.findings).toEqual([expect.objectContaining({ file: 'big.cpp', line: lines + 1, column: 19, symbol: 'mPTS' })])
      writeFileSync(join(root, 'locked.cpp'), 'mPTS;\n', { mode: 0o000 })
      // root reads any file; the check needs a file that is gone between listing and reading instead.
      const job = prepareScan(root, '1.0.0', '7.0.0')
      rmSync(join(root, 'locked.cpp'))
      expect(() => scanFiles(job)).toThrow(`The file '${root}/locked.cpp' cannot be read: ENOENT.`)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('refuses a FIFO instead of waiting forever for a writer, and a FIFO swapped in after listing reads as empty', () => {
    const root = mkdtempSync(join(tmpdir(), 'svcops-sdk-'))
    try {
      const fifo = join(root, 'pipe.cpp')
      execFileSync('mkfifo', [fifo])
      expect(() => scanSdk(fifo, '1.0.0', '7.0.0')).toThrow(BadInputError)
      expect(() => scanSdk(fifo, '1.0.0', '7.0.0')).toThrow(
        `'${fifo}' is neither a directory nor a regular file (a FIFO, socket or device); expected C++ sources.`,
      )
      // The tree walk lists regular files only; a file replaced by a FIFO after listing must not hang.
      rmSync(fifo)
      writeFileSync(fifo, 'mPTS;\n')
      const job = prepareScan(root, '1.0.0', '7.0.0')
      rmSync(fifo)
      execFileSync('mkfifo', [fifo])
      expect(scanFiles(job).bytes).toBe(0)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe('svcops scan sdk: calls through typed variables', () => {
  it.each([
    [
      'a shared pointer member',
      'std::shared_ptr<MediaReceiver> mReceiver;\nvoid run() { mReceiver->start(settings); }',
      [[2, 25, '5.0.0/media-receiver-start']],
    ],
    ['a local object', 'MediaReceiver receiver(config);\nreceiver.start(settings);', [[2, 10, '5.0.0/media-receiver-start']]],
    [
      'a reference parameter',
      'void setup(MediaStreamer& streamer, int n) {\n  streamer.configure(s);\n}',
      [[2, 12, '5.0.0/media-streamer-configure']],
    ],
    ['auto with make_shared', 'auto rx = std::make_shared<MediaReceiver>(cfg);\nrx->start(s);', [[2, 5, '5.0.0/media-receiver-start']]],
  ])('finds the changed method on %s', (_name, code, expected) => {
    expect(find(code, '4.0.0', '5.0.0')).toEqual(expected)
  })

  it.each([
    ['an object of another type', 'Encoder encoder;\nencoder.start(settings);'],
    ['a call in a comment', 'MediaReceiver receiver;\n// receiver.start(settings);'],
    ['a method that did not change', 'MediaReceiver receiver;\nreceiver.stop();'],
  ])('ignores %s', (_name, code) => {
    expect(find(code, '4.0.0', '5.0.0')).toEqual([])
  })
})
